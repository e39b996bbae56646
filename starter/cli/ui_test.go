package cli

import (
	"bytes"
	"ctxlab/starter/exitcode"
	"ctxlab/starter/sweepclient"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseUIFlags(t *testing.T) {
	o, err := parseRun([]string{"spec.jsonnet", "--ui"}, io.Discard)
	if err != nil || !o.UI.Wanted() || o.UI.Port != 0 {
		t.Errorf("run --ui: %+v, %v", o.UI, err)
	}
	o, err = parseRun([]string{"--ui-port", "8099", "spec.jsonnet"}, io.Discard)
	if err != nil || !o.UI.Wanted() || o.UI.Port != 8099 {
		t.Errorf("run --ui-port 8099 (implies --ui): %+v, %v", o.UI, err)
	}
	o, err = parseRun([]string{"spec.jsonnet"}, io.Discard)
	if err != nil || o.UI.Wanted() {
		t.Errorf("run without --ui: %+v, %v", o.UI, err)
	}
	u, err := parseUI([]string{"demo", "--runs", "out", "--ui-port", "9000"}, io.Discard)
	if err != nil || u.name != "demo" || u.runs != "out" || u.port != 9000 || u.namespace != "default" {
		t.Errorf("ui demo --runs out --ui-port 9000: %+v, %v", u, err)
	}
	if _, err := parseUI(nil, io.Discard); err == nil {
		t.Error("ui without a run name was accepted")
	}
}

func TestUIWithoutSweepFailsClearly(t *testing.T) {
	runs := t.TempDir()
	var stderr bytes.Buffer
	code := Main([]string{"ui", "nosuch", "--runs", runs}, io.Discard, &stderr)
	if code != exitcode.Usage || !strings.Contains(stderr.String(), "no sweep named \"nosuch\"") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(runs, "nosuch")); err == nil {
		t.Error("starter ui created a run folder for a sweep that never ran")
	}
}

func TestUIHintForOtherClusters(t *testing.T) {
	h := sweepclient.ExternalUIHint("temporal.example.org:7233")
	if !strings.Contains(h, "http://temporal.example.org:8233") {
		t.Errorf("hint: %s", h)
	}
}
