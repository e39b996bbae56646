package predictions

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"ctxlab/activities/cas"
	"ctxlab/results"
)

func write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadFileForms(t *testing.T) {
	want := []Prediction{{"a__b-1", "m", "diff --git a/x b/x\n"}, {"a__b-2", "m", ""}}
	for name, text := range map[string]string{
		"jsonl": `{"instance_id":"a__b-1","model_name_or_path":"m","model_patch":"diff --git a/x b/x\n"}` + "\n\n" +
			`{"instance_id":"a__b-2","model_name_or_path":"m"}` + "\n",
		"list": `[{"instance_id":"a__b-1","model_name_or_path":"m","model_patch":"diff --git a/x b/x\n"},
 {"instance_id":"a__b-2","model_name_or_path":"m","model_patch":null}]`,
		"map": "{\n\"a__b-2\": {\"model_name_or_path\":\"m\"},\n\"a__b-1\": {\"model_name_or_path\":\"m\",\"model_patch\":\"diff --git a/x b/x\\n\"}\n}",
	} {
		got, err := ReadFile(write(t, name, text))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
	for name, text := range map[string]string{
		"bad line":  `{"instance_id":"x","model_patch":""}` + "\nnot json\n",
		"no id":     `{"model_patch":""}` + "\n",
		"duplicate": `{"instance_id":"x"}` + "\n" + `{"instance_id":"x"}` + "\n",
		"empty":     "\n",
	} {
		if _, err := ReadFile(write(t, name, text)); err == nil {
			t.Errorf("%s: no error", name)
		} else if name == "bad line" && !strings.Contains(err.Error(), ":2:") {
			t.Errorf("%s: error does not name the line: %v", name, err)
		}
	}
}

func TestExport(t *testing.T) {
	run := t.TempDir()
	store, err := cas.NewDir(filepath.Join(run, "cas"))
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := store.Put(context.Background(), []byte("the patch\n"))
	rows := []results.Row{
		{"instance_id": "i-2", "method": "oracle", "model": "offline", "patch_ref": string(ref)},
		{"instance_id": "i-1", "method": "oracle", "model": "offline", "patch_ref": string(ref)},
		{"instance_id": "i-1", "method": "none", "model": "offline"},
	}
	if _, err := (results.Store{Path: filepath.Join(run, "results.jsonl")}).Append(rows); err != nil {
		t.Fatal(err)
	}
	res, err := Export(context.Background(), run)
	if err != nil || res.NoPatch != 1 || len(res.Files) != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	got, err := ReadFile(filepath.Join(run, "predictions", "offline__oracle.jsonl"))
	want := []Prediction{{"i-1", "offline__oracle", "the patch\n"}, {"i-2", "offline__oracle", "the patch\n"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("oracle: %+v %v", got, err)
	}
	if m, meth := SplitModelName("offline__oracle"); m != "offline" || meth != "oracle" {
		t.Errorf("split: %s %s", m, meth)
	}
}
