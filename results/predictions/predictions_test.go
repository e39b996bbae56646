package predictions

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"ctxlab/results"
	"ctxlab/store/cas"
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

// Multi-SWE-bench predictions are read as instances org__repo-number of the model the file is named after, and a
// run's export writes them beside the SWE-bench file, in the format its harness reads.
func TestMultiSWEBenchPredictions(t *testing.T) {
	file := write(t, "gold"+MultiSWEBenchSuffix+".jsonl", `{"org":"acme","repo":"tool_kit","number":42,"fix_patch":"diff a\n"}`+"\n"+
		`{"org":"acme","repo":"tool_kit","number":"43","fix_patch":""}`+"\n")
	got, err := ReadFile(file)
	want := []Prediction{{"acme__tool_kit-42", "gold", "diff a\n"}, {"acme__tool_kit-43", "gold", ""}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v, %v", got, err)
	}
	if _, err := ReadFile(write(t, "bad.jsonl", `{"org":"a","repo":"b","number":"x1"}`+"\n")); err == nil ||
		!strings.Contains(err.Error(), "bad.jsonl:1") {
		t.Errorf("bad number: %v", err)
	}

	run := t.TempDir()
	store, err := cas.NewDir(filepath.Join(run, "cas"))
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := store.Put(context.Background(), []byte("the patch\n"))
	rows := []results.Row{
		{"instance_id": "acme__tool_kit-42", "method": "oracle", "model": "m", "patch_ref": string(ref)},
		{"instance_id": "not-an-msb-id", "method": "oracle", "model": "m", "patch_ref": string(ref)},
	}
	if _, err := (results.Store{Path: filepath.Join(run, "results.jsonl")}).Append(rows); err != nil {
		t.Fatal(err)
	}
	res, err := Export(context.Background(), run)
	msbFile := filepath.Join(run, "predictions", "m__oracle"+MultiSWEBenchSuffix+".jsonl")
	if err != nil || res.Files[msbFile] != 1 || !reflect.DeepEqual(res.NotMultiSWEBench, []string{"not-an-msb-id"}) {
		t.Fatalf("%+v %v", res, err)
	}
	text, _ := os.ReadFile(msbFile)
	if string(text) != `{"org":"acme","repo":"tool_kit","number":42,"fix_patch":"the patch\n"}`+"\n" {
		t.Errorf("written %s", text)
	}
	back, err := ReadFile(msbFile)
	if err != nil || !reflect.DeepEqual(back, []Prediction{{"acme__tool_kit-42", "m__oracle", "the patch\n"}}) {
		t.Errorf("read back %+v %v", back, err)
	}
}

// The format is told by decoding, not by the shape of the lines: a map keyed by instance id on one line is the same
// predictions as the map indented, and a one-line list or a single prediction is read too.
func TestReadFileSniffsTheFormatByDecoding(t *testing.T) {
	want := []Prediction{{"a__b-1", "m", "diff --git a/x b/x\n"}, {"a__b-2", "m", ""}}
	for name, text := range map[string]string{
		"one-line map":          `{"a__b-2": {"model_name_or_path":"m"}, "a__b-1": {"instance_id":"a__b-1","model_name_or_path":"m","model_patch":"diff --git a/x b/x\n"}}`,
		"one-line map, newline": `{"a__b-1": {"model_name_or_path":"m","model_patch":"diff --git a/x b/x\n"},"a__b-2": {"model_name_or_path":"m","model_patch":null}}` + "\n",
		"one-line list":         `[{"instance_id":"a__b-1","model_name_or_path":"m","model_patch":"diff --git a/x b/x\n"},{"instance_id":"a__b-2","model_name_or_path":"m"}]`,
		"indented objects": "{\n \"instance_id\": \"a__b-1\",\n \"model_name_or_path\": \"m\",\n \"model_patch\": \"diff --git a/x b/x\\n\"\n}\n" +
			"{\n \"instance_id\": \"a__b-2\",\n \"model_name_or_path\": \"m\"\n}\n",
	} {
		got, err := ReadFile(write(t, "p.json", text))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
	one, err := ReadFile(write(t, "p.json", `{"instance_id":"a__b-1","model_name_or_path":"m"}`))
	if err != nil || !reflect.DeepEqual(one, []Prediction{{"a__b-1", "m", ""}}) {
		t.Errorf("a single prediction: %+v, %v", one, err)
	}
	for name, c := range map[string]struct{ text, says string }{
		"key and id differ":  {`{"a__b-1": {"instance_id":"a__b-9"}}`, "a__b-9"},
		"map of non-objects": {`{"a__b-1": "diff"}`, "a__b-1"},
		"a number":           {`42`, "not predictions"},
		"torn map":           {`{"a__b-1": {"model_patch": "x"}` + "\n", "p.json"},
		"bad third line": {`{"instance_id":"x"}` + "\n" + `{"instance_id":"y"}` + "\n" + `{"instance_id": oops}` + "\n",
			":3:"},
	} {
		if _, err := ReadFile(write(t, "p.json", c.text)); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v (want an error saying %q)", name, err, c.says)
		}
	}
}

// TestExportKeepsEveryPairApart is issue 39's ninth defect: models "org/m" and "org_m" of one spec were written to
// one file (a '/' mapped to '_'): 8 rows in all, predictions for 2 of 4 (model, method) pairs, no warning. Every
// pair now has its own file holding its own predictions, and pairs whose prediction names would be one
// (model "x__y" with method "z", model "x" with method "y__z") are refused, naming both.
func TestExportKeepsEveryPairApart(t *testing.T) {
	run := t.TempDir()
	store, err := cas.NewDir(filepath.Join(run, "cas"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []results.Row
	for _, model := range []string{"org/m", "org_m"} {
		for _, method := range []string{"a", "b"} {
			ref, _ := store.Put(context.Background(), []byte(model+" "+method+"\n"))
			for _, id := range []string{"i-1", "i-2"} {
				rows = append(rows, results.Row{"instance_id": id, "method": method, "model": model,
					"patch_ref": string(ref)})
			}
		}
	}
	if _, err := (results.Store{Path: filepath.Join(run, "results.jsonl")}).Append(rows); err != nil {
		t.Fatal(err)
	}
	res, err := Export(context.Background(), run)
	if err != nil || len(res.Files) != 4 {
		t.Fatalf("export: %+v, %v; want 4 files", res, err)
	}
	seen := map[string]bool{}
	for path, n := range res.Files {
		ps, err := ReadFile(path)
		if err != nil || n != 2 || len(ps) != 2 || ps[0].ModelNameOrPath != ps[1].ModelNameOrPath {
			t.Fatalf("%s: %d written, read %+v, %v", path, n, ps, err)
		}
		name := ps[0].ModelNameOrPath
		model, method := SplitModelName(name)
		if seen[name] || ps[0].ModelPatch != model+" "+method+"\n" || ps[1].ModelPatch != ps[0].ModelPatch {
			t.Errorf("%s holds %s's predictions %+v", path, name, ps)
		}
		seen[name] = true
	}

	clash := t.TempDir()
	rows = []results.Row{
		{"instance_id": "i-1", "method": "z", "model": "x__y"},
		{"instance_id": "i-1", "method": "y__z", "model": "x"},
	}
	if _, err := (results.Store{Path: filepath.Join(clash, "results.jsonl")}).Append(rows); err != nil {
		t.Fatal(err)
	}
	if _, err := cas.NewDir(filepath.Join(clash, "cas")); err != nil {
		t.Fatal(err)
	}
	if res, err := Export(context.Background(), clash); err == nil || !strings.Contains(err.Error(), `"x__y"`) ||
		!strings.Contains(err.Error(), `"y__z"`) {
		t.Errorf("two pairs of one prediction name: %+v, %v; want them refused, named", res, err)
	}
}
