package sweepclient

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/jsonnet"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/workflows"
)

// checkoutSpec writes a spec and its dataset into a folder laid out like a checkout: dir/specs/s.jsonnet names
// dir/data/rows.jsonl by a relative path, which compiling makes absolute.
func checkoutSpec(t *testing.T, dir, rows string) string {
	t.Helper()
	for name, text := range map[string]string{
		"data/rows.jsonl": rows,
		"specs/s.jsonnet": `local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({
  name: 'moved',
  dataset: ctxlab.datasets.swebench('../data/rows.jsonl'),
  models: [ctxlab.models.offline],
  methods: [ctxlab.methods.no_source],
})
`} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "specs", "s.jsonnet")
}

// hashOfSpec compiles the spec and hashes the sweep it starts, as starter run does.
func hashOfSpec(t *testing.T, path string, prepare func(*specs.Experiment)) (string, *specs.Experiment) {
	t.Helper()
	e, err := jsonnet.Compile(path, jsonnet.Flags{}.Options())
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(e)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := specHash(sweepInput(e, plan, cas.RefOf(b), 0), plan)
	if err != nil {
		t.Fatal(err)
	}
	return hash, e
}

const rowsText = `{"instance_id":"o__r-1","repo":"o/r","base_commit":"abc","problem_statement":"p","patch":"d","test_patch":"t","FAIL_TO_PASS":["TestA"],"PASS_TO_PASS":[]}` + "\n"

// The same spec in two copies of a checkout is one sweep; an edited dataset is another.
func TestSpecHashFollowsTheDatasetContentNotItsPath(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	h1, e1 := hashOfSpec(t, checkoutSpec(t, first, rowsText), nil)
	h2, e2 := hashOfSpec(t, checkoutSpec(t, second, rowsText), nil)
	if e1.Dataset.File == e2.Dataset.File {
		t.Fatalf("setup: both specs name %s", e1.Dataset.File)
	}
	if h1 != h2 {
		t.Errorf("moving the checkout changed the spec hash: %s and %s", h1, h2)
	}
	edited := rowsText[:len(rowsText)-1] + "\n" + `{"instance_id":"o__r-2","repo":"o/r","base_commit":"abc","problem_statement":"p","patch":"d","test_patch":"t","FAIL_TO_PASS":["TestA"],"PASS_TO_PASS":[]}` + "\n"
	h3, _ := hashOfSpec(t, checkoutSpec(t, second, edited), nil)
	if h3 == h1 {
		t.Errorf("an edited dataset kept the spec hash %s", h1)
	}
	// A folder of shards counts by its files' names and bytes.
	shards := func(dir, name string) func(*specs.Experiment) {
		return func(e *specs.Experiment) {
			p := filepath.Join(dir, "shards", name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(rowsText), 0o644); err != nil {
				t.Fatal(err)
			}
			e.Dataset.File = filepath.Join(dir, "shards")
		}
	}
	s1, _ := hashOfSpec(t, checkoutSpec(t, first, rowsText), shards(first, "test-0.jsonl"))
	s2, _ := hashOfSpec(t, checkoutSpec(t, second, rowsText), shards(second, "test-0.jsonl"))
	s3, _ := hashOfSpec(t, checkoutSpec(t, t.TempDir(), rowsText), shards(t.TempDir(), "train-0.jsonl"))
	if s1 != s2 || s1 == s3 || s1 == h1 {
		t.Errorf("shard folders: moved %s / %s, renamed %s, single file %s", s1, s2, s3, h1)
	}
}

// The demo's dataset is built into the runs folder: runs folders in two places are one sweep.
func TestSpecHashOfTheDemoInTwoRunsFolders(t *testing.T) {
	var hashes []string
	for range 2 {
		runDir := filepath.Join(t.TempDir(), "runs", "demo")
		h, _ := hashOfSpec(t, filepath.Join("..", "..", "specs", "demo.jsonnet"), func(e *specs.Experiment) {
			if _, err := PrepareDataset(e, runDir); err != nil {
				t.Fatal(err)
			}
		})
		hashes = append(hashes, h)
	}
	if hashes[0] != hashes[1] {
		t.Errorf("the demo's hash depends on the runs folder: %s and %s", hashes[0], hashes[1])
	}
}

// A sweep finished before plans marked their borrowed steps keeps its hash after the upgrade: the marks change
// nothing that runs, and a changed hash would put the finished rows aside and run the sweep again.
func TestSpecHashIgnoresBorrowedMarks(t *testing.T) {
	anchor := specs.ArmStep{ID: "context", Key: "k1"}
	fitted := specs.ArmStep{ID: "anchor.context", Key: "k1", Borrowed: true}
	marked := &specs.Plan{Format: specs.PlanFormatBorrowed, Nodes: []specs.Node{{Key: "k1"}},
		Arms: []specs.Arm{{Method: "m", Model: "x", Steps: []specs.ArmStep{anchor}},
			{Method: "f", Model: "x", Steps: []specs.ArmStep{fitted}}}}
	old := &specs.Plan{Nodes: marked.Nodes, Arms: []specs.Arm{marked.Arms[0],
		{Method: "f", Model: "x", Steps: []specs.ArmStep{{ID: "anchor.context", Key: "k1"}}}}}
	oldJSON, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	dataset := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := os.WriteFile(dataset, []byte(rowsText), 0o644); err != nil {
		t.Fatal(err)
	}
	in := workflows.SweepInput{Run: "r", Dataset: specs.Dataset{File: dataset}}
	in.Plan = cas.RefOf(oldJSON)
	before, err := specHash(in, old)
	if err != nil {
		t.Fatal(err)
	}
	markedJSON, _ := json.Marshal(marked)
	in.Plan = cas.RefOf(markedJSON)
	after, err := specHash(in, marked)
	if err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Errorf("the borrowed marks changed the spec hash: %s before, %s after", before, after)
	}
	if !marked.Arms[1].Steps[0].Borrowed {
		t.Error("hashing cleared the plan's own borrowed mark")
	}
}

// offlineTokenizerSpec writes a one-model spec whose model is the offline stand-in naming tokenizer modelTok ("" for none),
// with the experiment's tokenizer pinned to pin ("" for the default).
func offlineTokenizerSpec(t *testing.T, modelTok, pin string) string {
	t.Helper()
	dir := t.TempDir()
	path := checkoutSpec(t, dir, rowsText)
	model := "ctxlab.models.offline"
	if modelTok != "" {
		model += fmt.Sprintf(" + { tokenizer: %q }", modelTok)
	}
	extra := ""
	if pin != "" {
		extra = fmt.Sprintf("  tokenizer: %q,\n", pin)
	}
	text := strings.Replace(readText(t, path), "models: [ctxlab.models.offline],\n", "models: ["+model+"],\n"+extra, 1)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFormerDefaultHash: a spec whose model names its own tokenizer changed its hash when the default became
// 'model'; formerDefaultHash recomputes the hash it had (that of the spec pinning o200k_base), and only for a spec
// that counts in each model's own. A model without one (the offline stand-in, as in the demo) kept its hash.
func TestFormerDefaultHash(t *testing.T) {
	hashOf := func(path string) (string, *specs.Experiment, workflows.SweepInput) {
		h, e := hashOfSpec(t, path, nil)
		plan, err := specs.BuildPlan(e)
		if err != nil {
			t.Fatal(err)
		}
		return h, e, sweepInput(e, plan, "", 0)
	}
	upgraded, e, in := hashOf(offlineTokenizerSpec(t, "cl100k_base", ""))
	pinned, pe, pin := hashOf(offlineTokenizerSpec(t, "cl100k_base", "o200k_base"))
	if e.Tokenizer != specs.TokenizerModel || upgraded == pinned {
		t.Fatalf("setup: the default %q left the hash %s unchanged", e.Tokenizer, upgraded)
	}
	if got := formerDefaultHash(e, in); got != pinned {
		t.Errorf("the former default's hash %s, want the pinned spec's %s", got, pinned)
	}
	if !recordedUnderFormerDefault(e, in, pinned) || recordedUnderFormerDefault(e, in, upgraded) {
		t.Error("recordedUnderFormerDefault does not tell the pinned spec's hash from this one's")
	}
	if got := formerDefaultHash(pe, pin); got != "" {
		t.Errorf("a spec that pins its tokenizer has a former default's hash %s", got)
	}
	if hint := formerDefaultHint(e, in, pinned); !strings.Contains(hint, "add tokenizer: 'o200k_base'") {
		t.Errorf("hint %q", hint)
	}
	plain, _, _ := hashOf(offlineTokenizerSpec(t, "", ""))
	plainPinned, _, _ := hashOf(offlineTokenizerSpec(t, "", "o200k_base"))
	if plain != plainPinned {
		t.Errorf("the offline stand-in's spec changed its hash with the default: %s, pinned %s", plain, plainPinned)
	}
}
