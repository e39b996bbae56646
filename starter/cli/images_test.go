package cli

import (
	"bytes"
	"testing"
)

func TestParseImagesBuildFlags(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseImagesBuild([]string{"--dataset", "d.jsonl", "--base", "me/py:1", "--namespace", "ns",
		"--instances", "a__b-1, c__d-2"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.dataset != "d.jsonl" || o.base != "me/py:1" || o.namespace != "ns" || !o.instances["a__b-1"] || !o.instances["c__d-2"] {
		t.Errorf("parsed %+v", o)
	}
	o, err = parseImagesBuild([]string{"--spec", "s.jsonnet", "--runs", "r", "--ext-str", "model=offline"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.spec != "s.jsonnet" || o.runs != "r" || o.ExtStr["model"] != "offline" || o.set["namespace"] || !o.set["runs"] {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range [][]string{{}, {"--base", "x"}, {"--dataset", "d", "extra"}, {"--dataset", "d", "--spec", "s"}} {
		if _, err := parseImagesBuild(bad, &stderr); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if code := Main([]string{"images", "push"}, &stderr, &stderr); code != exitUsage {
		t.Errorf("images push: exit %d", code)
	}
}
