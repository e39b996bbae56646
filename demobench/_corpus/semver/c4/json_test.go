package semver

import (
	"encoding/json"
	"strings"
	"testing"
)

type manifest struct {
	Version  Version     `json:"version"`
	Requires *Constraint `json:"requires"`
}

func TestJSONRoundTrip(t *testing.T) {
	in := `{"version":"1.4.0-rc.2","requires":">=1.2.0, <2.0.0"}`
	var m manifest
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if m.Version.String() != "1.4.0-rc.2" || !m.Requires.Check(MustParse("1.5.0")) {
		t.Fatalf("decoded %+v", m)
	}
	var out strings.Builder
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != in {
		t.Fatalf("got %s", got)
	}
}

func TestJSONRejectsBadVersion(t *testing.T) {
	var m manifest
	if err := json.Unmarshal([]byte(`{"version":"1.2"}`), &m); err == nil {
		t.Fatal("want an error for a partial version")
	}
}
