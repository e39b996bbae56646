package steps

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
	"ctxlab/testkit/demorun"
)

// Every demo instance: the gold patch resolves it, the empty patch does not, and the rows record how the patch
// applied and which patch it was.
func TestGradeGoldResolvesEveryDemoInstanceEmptyNone(t *testing.T) {
	f := newFixture(t)
	// The demo's grading options, read from specs/demo.jsonnet (its dataset's module proxy, Python tests by listed
	// ids, run with the standard library's unittest), on the local executor.
	e, err := jsonnet.Compile(filepath.Join("..", "..", "specs", "demo.jsonnet"), jsonnet.Options{})
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
	ids := make([]string, 0, len(f.Rows))
	for id := range f.Rows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		co := f.Must(f.Node("checkout", id, nil, nil))
		gold := f.Put(f.Rows[id].Patch)
		r := f.Must(f.Node("grade", id, params, map[string]api.NodeOutput{"checkout": co, "patch": gold})).Row
		if r["resolved"] != true || r["grade_status"] != grading.StatusResolved || r["patch_apply"] != string(diff.Applied) ||
			r["patch_ref"] != string(gold.Ref) {
			t.Errorf("%s gold: %v", id, r)
		}
		r = f.Must(f.Node("grade", id, params, map[string]api.NodeOutput{"checkout": co, "patch": f.Put("")})).Row
		if r["resolved"] != false || r["grade_status"] != grading.StatusEmptyPatch || r["patch_apply"] != string(diff.Empty) {
			t.Errorf("%s empty: %v", id, r)
		}
	}
}

func TestGradeRecordsRefusalsAndFuzz(t *testing.T) {
	f := newFixture(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	params := map[string]any{"grading": map[string]any{"timeout": "5m"}}
	grade := func(p string) map[string]any {
		t.Helper()
		return f.Must(f.Node("grade", demorun.Instance, params, map[string]api.NodeOutput{"checkout": co, "patch": f.Put(p)})).Row
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
	gold := f.Rows[demorun.Instance].Patch
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
	row := f.Rows[demorun.Instance]
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
	f.SetRow(row)
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	gold := f.Put(row.Patch)
	// The flaky test keeps its state outside its worktree, which only an unconfined run may write.
	r := f.Must(f.Node("grade", demorun.Instance, map[string]any{"grading": map[string]any{"timeout": "5m", "reruns": 2,
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

func TestGradeOutcomes(t *testing.T) {
	f := newFixture(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // graders' worktrees go here, so escapes are visible
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	store := f.Store
	patch := func(text string) api.NodeOutput {
		ref, err := store.Put(context.Background(), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return api.NodeOutput{Ref: ref}
	}
	params := map[string]any{"grading": map[string]any{"executor": "local", "timeout": "5m"}}
	grade := func(p api.NodeOutput, params map[string]any) map[string]any {
		t.Helper()
		return f.Must(f.Node("grade", demorun.Instance, params, map[string]api.NodeOutput{"checkout": co, "patch": p})).Row
	}

	if r := grade(patch(f.Rows[demorun.Instance].Patch), params); r["resolved"] != true || r["grade_status"] != grading.StatusResolved {
		t.Errorf("gold patch: %v", r)
	}
	if r := grade(patch(""), params); r["resolved"] != false || r["grade_status"] != grading.StatusEmptyPatch {
		t.Errorf("empty patch: %v", r)
	}
	escape := diff.Unified("../outside.txt", nil, []byte("pwned\n"))
	if r := grade(patch(escape), params); r["resolved"] != false || r["grade_status"] != grading.StatusPatchFailed {
		t.Errorf("escaping patch: %v", r)
	}
	if _, err := os.Stat(filepath.Join(tmp, "outside.txt")); err == nil {
		t.Error("a patch wrote outside its worktree")
	}
	if r := grade(patch("this is not a diff\n"), params); r["resolved"] != false {
		t.Errorf("garbage patch resolved: %v", r)
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("grading left %d entries in its temporary folder", len(left))
	}
}

func TestGradeKillsHangingTests(t *testing.T) {
	f := newFixture(t)
	row := f.Rows[demorun.Instance]
	row.TestPatch += diff.Unified("hang/hang_test.go", nil, []byte(
		"package hang\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestHang(t *testing.T) { time.Sleep(time.Hour) }\n"))
	row.FailToPass = append(row.FailToPass, "TestHang")
	f.SetRow(row)
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	gold, _ := f.Store.Put(context.Background(), []byte(row.Patch))
	start := time.Now()
	out := f.Must(f.Node("grade", demorun.Instance, map[string]any{"grading": map[string]any{"timeout": "4s"}},
		map[string]api.NodeOutput{"checkout": co, "patch": {Ref: gold}}))
	if out.Row["grade_status"] != grading.StatusTimeout || out.Row["resolved"] != false {
		t.Errorf("hanging tests: %v", out.Row)
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("grading took %s despite a 4s timeout", d)
	}
	if out.Ref == "" {
		t.Error("no test log stored for a timed-out run")
	}
}
