package grading

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/executor"
	"ctxlab/patch/diff"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// A patch that only adds a test file whose TestMain prints passing results for every listed test is not resolved;
// the row names the dropped file. With model_tests keep, the file stays and the row says so.
func TestGradeDropsModelTestFiles(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	base := map[string]string{
		"go.mod":   "module example.com/adder\n\ngo 1.21\n",
		"adder.go": "package adder\n\nfunc Add(a, b int) int { return a - b }\n",
	}
	in := swebench.Instance{InstanceID: "acme__adder-1", Repo: "acme/adder",
		Patch: diff.Unified("adder.go", []byte(base["adder.go"]), []byte("package adder\n\nfunc Add(a, b int) int { return a + b }\n")),
		TestPatch: diff.Unified("adder_test.go", nil, []byte("package adder\n\nimport \"testing\"\n\n"+
			"func TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n")),
		FailToPass: []string{"TestAdd"}}
	forged := diff.Unified("zz_forge_test.go", nil, []byte("package adder\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\n"+
		"func TestMain(m *testing.M) {\n\tfmt.Println(\"=== RUN   TestAdd\\n--- PASS: TestAdd (0.00s)\\nPASS\")\n\tos.Exit(0)\n}\n"))
	store, err := cas.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	materialize := func(_ context.Context, dir string) error {
		for name, body := range base {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	grade := func(patch, modelTests string) map[string]any {
		t.Helper()
		out, err := Grade(context.Background(), executor.Local{}, store, Request{Instance: in, Patch: patch,
			Grading:     specs.Grading{Executor: "local", Timeout: specs.Duration(5 * time.Minute), ModelTests: modelTests},
			Materialize: materialize})
		if err != nil {
			t.Fatal(err)
		}
		return out.Row
	}
	r := grade(forged, "")
	if r["resolved"] != false || !slices.Equal(asStrings(r["patch_test_files_dropped"]), []string{"zz_forge_test.go"}) ||
		r["patch_test_files_kept"] != nil {
		t.Errorf("forged TestMain, default grading: %v", r)
	}
	r = grade(in.Patch+forged, "drop")
	if r["resolved"] != true || !slices.Equal(asStrings(r["patch_test_files_dropped"]), []string{"zz_forge_test.go"}) {
		t.Errorf("gold plus forged TestMain: %v", r)
	}
	if r = grade(in.Patch, ""); r["resolved"] != true || r["patch_test_files_dropped"] != nil {
		t.Errorf("gold: %v", r)
	}
	r = grade(forged, "keep")
	if !slices.Equal(asStrings(r["patch_test_files_kept"]), []string{"zz_forge_test.go"}) || r["patch_test_files_dropped"] != nil {
		t.Errorf("forged TestMain, model_tests keep: %v", r)
	}
}

// asStrings reads a row's list field, before (a []string) or after a JSON round trip (a []any).
func asStrings(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, len(x))
		for i, s := range x {
			out[i], _ = s.(string)
		}
		return out
	}
	return nil
}
