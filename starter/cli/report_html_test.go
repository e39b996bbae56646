package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseReportPairs(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseReport([]string{"demo", "--pair", "a,b", "--pair", "c,d", "--store", "elsewhere"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Pairs, ",") != "a,b,c,d" || o.Store != "elsewhere" {
		t.Errorf("parsed %+v", o)
	}
	if _, err := parseReport([]string{"demo", "--pair", "a,b,c"}, &stderr); err == nil {
		t.Error("--pair with three methods accepted")
	}
}
