package activities

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/activities/api"
	"ctxlab/grading"
	"ctxlab/jsonnet"
	"ctxlab/patch/diff"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

func (f *fixture) putPatch(text string) api.NodeOutput {
	f.t.Helper()
	ref, err := mustStore(f.t, f.a).Put(context.Background(), []byte(text))
	if err != nil {
		f.t.Fatal(err)
	}
	return api.NodeOutput{Ref: ref}
}

// Every demo instance: the gold patch resolves it, the empty patch does not, and the rows record how the patch
// applied and which patch it was.
func TestGradeGoldResolvesEveryDemoInstanceEmptyNone(t *testing.T) {
	f := newFixture(t)
	// The demo's grading options, read from specs/demo.jsonnet (its dataset's module proxy, Python tests by listed
	// ids, run with the standard library's unittest), on the local executor.
	e, err := jsonnet.Compile(filepath.Join("..", "specs", "demo.jsonnet"), jsonnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.Grading.Executor, e.Grading.Timeout = "local", specs.Duration(5*time.Minute)
	b, err := json.Marshal(e.Grading)
	if err != nil {
		t.Fatal(err)
	}
	var options map[string]any
	if err := json.Unmarshal(b, &options); err != nil {
		t.Fatal(err)
	}
	params := map[string]any{"grading": options}
	ids := make([]string, 0, len(f.rows))
	for id := range f.rows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		co := f.must(f.node("checkout", id, nil, nil))
		gold := f.putPatch(f.rows[id].Patch)
		r := f.must(f.node("grade", id, params, map[string]api.NodeOutput{"checkout": co, "patch": gold})).Row
		if r["resolved"] != true || r["grade_status"] != grading.StatusResolved || r["patch_apply"] != string(diff.Applied) ||
			r["patch_ref"] != string(gold.Ref) {
			t.Errorf("%s gold: %v", id, r)
		}
		r = f.must(f.node("grade", id, params, map[string]api.NodeOutput{"checkout": co, "patch": f.putPatch("")})).Row
		if r["resolved"] != false || r["grade_status"] != grading.StatusEmptyPatch || r["patch_apply"] != string(diff.Empty) {
			t.Errorf("%s empty: %v", id, r)
		}
	}
}

func TestGradeRecordsRefusalsAndFuzz(t *testing.T) {
	f := newFixture(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	co := f.must(f.node("checkout", inst, nil, nil))
	params := map[string]any{"grading": map[string]any{"timeout": "5m"}}
	grade := func(p string) map[string]any {
		t.Helper()
		return f.must(f.node("grade", inst, params, map[string]api.NodeOutput{"checkout": co, "patch": f.putPatch(p)})).Row
	}
	for name, c := range map[string]struct {
		patch, status, apply string
	}{
		"dotdot":   {diff.Unified("../outside.txt", nil, []byte("pwned\n")), grading.StatusPatchFailed, string(diff.Escapes)},
		"absolute": {"--- /dev/null\n+++ " + filepath.Join(tmp, "abs.txt") + "\n@@ -0,0 +1 @@\n+pwned\n", grading.StatusPatchFailed, string(diff.Escapes)},
		"garbage":  {"I fixed the bug by editing the file.\n", grading.StatusMalformed, string(diff.Malformed)},
		"conflict": {diff.Unified("README.md", []byte("not the readme\n"), []byte("x\n")), grading.StatusPatchFailed, string(diff.Failed)},
	} {
		r := grade(c.patch)
		if r["resolved"] != false || r["grade_status"] != c.status || r["patch_apply"] != c.apply || r["grade_error"] == "" {
			t.Errorf("%s: %v", name, r)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "outside.txt")); err == nil {
		t.Error("a patch wrote outside its worktree")
	}
	if _, err := os.Stat(filepath.Join(tmp, "abs.txt")); err == nil {
		t.Error("an absolute path was written")
	}

	// The gold patch against drifted context: applied with fuzz, and still resolved.
	gold := f.rows[inst].Patch
	files, err := diff.Parse(gold)
	if err != nil {
		t.Fatal(err)
	}
	frag := files[0].TextFragments[0]
	var ctxLine string
	for _, l := range frag.Lines {
		if l.Op.String() == " " && len(l.Line) > 3 {
			ctxLine = l.Line
			break
		}
	}
	if ctxLine == "" {
		t.Fatalf("no context line in the first hunk of %s", gold)
	}
	drifted := strings.Replace(gold, " "+ctxLine, " "+strings.TrimRight(ctxLine, "\n")+" // drifted\n", 1)
	r := grade(drifted)
	if r["patch_apply"] != string(diff.AppliedWithFuzz) || r["resolved"] != true || r["patch_rejected"] == nil {
		t.Errorf("drifted gold: %v", r)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("grading left %d entries in its temporary folder", len(left))
	}
}

// A flaky FAIL_TO_PASS test (fails on its first run only) is re-run, and the row says the runs disagreed. The test
// also checks that the worker's credentials do not reach the tests.
func TestGradeRerunsRecordDisagreement(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-should-not-leak")
	t.Setenv("GITHUB_TOKEN", "should-not-leak")
	state := t.TempDir()
	f := newFixture(t)
	row := f.rows[inst]
	row.TestPatch += diff.Unified("flaky/flaky_test.go", nil, []byte(`package flaky

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFlaky(t *testing.T) {
	marker := filepath.Join("`+state+`", "ran-once")
	if _, err := os.Stat(marker); err != nil {
		os.WriteFile(marker, nil, 0o644)
		t.Fatal("first run fails")
	}
}

func TestNoCredentials(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "GITHUB_TOKEN"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Errorf("%s=%q reached the tests", k, v)
		}
	}
}
`))
	row.FailToPass = append(row.FailToPass, "TestFlaky", "TestNoCredentials")
	ref, err := cas.PutJSON(context.Background(), mustStore(t, f.a), row)
	if err != nil {
		t.Fatal(err)
	}
	f.refs[inst] = api.InstanceRef{ID: inst, Ref: ref}
	co := f.must(f.node("checkout", inst, nil, nil))
	gold := f.putPatch(row.Patch)
	// The flaky test keeps its state outside its worktree, which only an unconfined run may write.
	r := f.must(f.node("grade", inst, map[string]any{"grading": map[string]any{"timeout": "5m", "reruns": 2,
		"isolation": "none"}},
		map[string]api.NodeOutput{"checkout": co, "patch": gold})).Row
	runs, _ := r["grade_runs"].([]any)
	if len(runs) != 3 || runs[0] != grading.StatusUnresolved || runs[1] != grading.StatusResolved || runs[2] != grading.StatusResolved {
		t.Fatalf("runs = %v (row %v)", r["grade_runs"], r)
	}
	if r["grade_flaky"] != true || r["resolved"] != true {
		t.Errorf("row: %v", r)
	}
}
