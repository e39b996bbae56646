package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// modulePackages runs `go list` over the whole module and returns each package with the imports of its non-test
// files.
func modulePackages(t *testing.T) []Package {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports", Module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s/...: %v\n%s", Module, err, stderr.String())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages in %s; is the test running inside the module?", len(pkgs), Module)
	}
	return pkgs
}

// touchSources stats every Go file and go.mod in the module and opens every folder. `go test` caches a result
// against the files the test itself opened, not the ones the `go list` child read; without this an upward import
// added later would be answered by the cached pass.
func touchSources(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := strings.TrimSpace(string(out))
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".go") || d.Name() == "go.mod") {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("walking module %s: %v", root, err)
	}
}

func TestModuleImportsPointDown(t *testing.T) {
	touchSources(t)
	for _, problem := range Check(modulePackages(t)) {
		t.Error(problem)
	}
}

func TestCheckFindsUpwardAndSidewaysImports(t *testing.T) {
	pkgs := []Package{
		{"ctxlab/store/cas", []string{"fmt", "ctxlab/activities"}},                    // up
		{"ctxlab/runlog", []string{"ctxlab/store/cas", "ctxlab/internal/jsonl"}},      // down: fine
		{"ctxlab/dataset/swebench", []string{"ctxlab/patch/diff"}},                    // sideways: same layer, other unit
		{"ctxlab/activities/dense", []string{"ctxlab/activities/llm"}},                // same unit: fine
		{"ctxlab/activities/llm", []string{"ctxlab/activities"}},                      // up, out of its unit
		{"ctxlab/internal/cluster", []string{"ctxlab/wiring"}},                        // the exception sits higher
		{"ctxlab/workflows", []string{"ctxlab/activities/api", "go.temporal.io/sdk"}}, // down: fine
		{"ctxlab/workflows", []string{"ctxlab/activities"}},                           // sideways: peers
		{"ctxlab/newthing", []string{"ctxlab/specs"}},                                 // not placed
		{"other.example/x", []string{"ctxlab/activities"}},                            // outside the module: ignored
		{"ctxlab/results/runstate", []string{"ctxlab/results", "ctxlab/nowhere"}},     // import of an unplaced package
	}
	got := Check(pkgs)
	want := []string{
		`ctxlab/activities/llm (layer "activity parts") imports ctxlab/activities (layer "activities and workflows"), which is not below it`,
		`ctxlab/dataset/swebench (layer "infrastructure") imports ctxlab/patch/diff (layer "infrastructure"), which is not below it`,
		`ctxlab/internal/cluster (layer "tools") imports ctxlab/wiring (layer "worker wiring"), which is not below it`,
		`ctxlab/newthing: no layer covers this package; add it to layers.Stack`,
		`ctxlab/results/runstate imports ctxlab/nowhere, which no layer covers; add it to layers.Stack`,
		`ctxlab/store/cas (layer "infrastructure") imports ctxlab/activities (layer "activities and workflows"), which is not below it`,
		`ctxlab/workflows (layer "activities and workflows") imports ctxlab/activities (layer "activities and workflows"), which is not below it`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("Check:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// TestWorkflowsNeedNoModelClient: the workflows act on a failure's kind (activities/api/errkind) but must not
// depend, even indirectly, on the model clients of activities/llm; the layers alone would allow that import.
func TestWorkflowsNeedNoModelClient(t *testing.T) {
	touchSources(t)
	pkg := Module + "/workflows"
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, Module+"/activities/api/errkind") {
		t.Errorf("%s does not depend on %s/activities/api/errkind; is the list complete?", pkg, Module)
	}
	for _, forbidden := range []string{Module + "/activities/llm", "github.com/openai/openai-go/v3"} {
		if slices.Contains(deps, forbidden) {
			t.Errorf("%s depends on %s; import the error kinds from activities/api/errkind instead", pkg, forbidden)
		}
	}
}

// TestWorkflowsLinkNoCloudSDK keeps the workflow code's build small: workflows and activities/api name blobs by
// cas.Ref, and the object-store client (store/bucket: gocloud, the AWS SDK) is linked by the activities that open a
// store only. `go list -deps ./workflows` is go.temporal.io/sdk's own graph (about 420 packages with the standard
// library's) plus ctxlab's few.
func TestWorkflowsLinkNoCloudSDK(t *testing.T) {
	for _, pkg := range []string{Module + "/workflows", Module + "/activities/api"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "gocloud.dev/") || strings.Contains(dep, "/aws/") ||
				strings.HasPrefix(dep, "github.com/aws/") || dep == Module+"/store/bucket" {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}

// TestStepsLinkNoTemporal: the steps are plain functions; package activities alone turns them into Temporal
// activities, so the steps' build, everything they import included, holds no package of the Temporal SDK or API.
func TestStepsLinkNoTemporal(t *testing.T) {
	touchSources(t)
	pkg := Module + "/activities/steps"
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, Module+"/activities/llm") {
		t.Errorf("%s does not depend on %s/activities/llm; is the list complete?", pkg, Module)
	}
	var temporal []string
	for _, dep := range deps {
		if strings.HasPrefix(dep, "go.temporal.io/") {
			temporal = append(temporal, dep)
		}
	}
	if len(temporal) > 0 {
		t.Errorf("%s links %d Temporal packages (%s, ...): a step must not need Temporal (heartbeats and error "+
			"types go through steps.Env and steps.Error)", pkg, len(temporal), temporal[0])
	}
}

// TestGradingNeedsNoActivities: the grading tree is a library of its own, which `starter grade`, the grade step and
// any other program can call: its build, everything it imports included, holds no package of activities/ but the
// failure kinds (activities/api/errkind, which the model calls share) and nothing of Temporal.
func TestGradingNeedsNoActivities(t *testing.T) {
	touchSources(t)
	out, err := exec.Command("go", "list", "-deps", Module+"/grading/...").Output()
	if err != nil {
		t.Fatalf("go list -deps %s/grading/...: %v", Module, err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, Module+"/grading/executor") {
		t.Errorf("%s/grading/... does not depend on %s/grading/executor; is the list complete?", Module, Module)
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "go.temporal.io/") ||
			(strings.HasPrefix(dep, Module+"/activities") && dep != Module+"/activities/api/errkind") {
			t.Errorf("the grading tree links %s", dep)
		}
	}
}
