package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ctxlab/activities"
	"ctxlab/activities/contexts"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/cli"
	"ctxlab/store/cas"
	"ctxlab/testkit/e2e"
)

// Hostile stored objects: a patch that closes the <pre> it is shown in and opens a script, a test log with an
// image whose error handler runs script.
const (
	attackPatch = "--- a/calc.go\n+++ b/calc.go\n@@ -1 +1 @@\n-x\n+</pre><script>document.title='pwned-patch'</script>\n"
	attackLog   = "--- FAIL: TestAdd </pre><img src=x onerror=\"document.title='pwned-log'\">\nFAIL\n"
)

// htmlRunFolder makes a run folder as `starter run` leaves it: a recorded spec whose methods have context, patch,
// measure and grade steps, the node records of every step and the stored context, patch and test log of each row.
func htmlRunFolder(t *testing.T, runs string, instances, methods []string) {
	t.Helper()
	dir := filepath.Join(runs, "exp")
	e := &specs.Experiment{Name: "exp", Anchor: methods[0], Models: []specs.Model{{Name: "offline"}}}
	for i, m := range methods {
		e.Methods = append(e.Methods, specs.Method{Name: m, Steps: []specs.Step{
			{ID: "checkout", Activity: "checkout"},
			{ID: "context", Activity: "retrieve", Params: map[string]any{"k": i + 1}, Inputs: map[string]string{"checkout": "checkout"}},
			{ID: "patch", Activity: "patch", Inputs: map[string]string{"context": "context"}},
			{ID: "measure", Activity: "measure", Inputs: map[string]string{"checkout": "checkout", "context": "context", "patch": "patch"}},
			{ID: "grade", Activity: "grade", Inputs: map[string]string{"checkout": "checkout", "patch": "patch"}},
		}})
	}
	rec, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := runfolder.WriteAtomic(runfolder.Spec(dir), append(rec, '\n')); err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	store, err := cas.NewDir(filepath.Join(dir, "cas"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	memo := func(inst, node string, ref cas.Ref) {
		b, _ := json.Marshal(map[string]any{"ref": ref})
		path := activities.NodeMemoPath(dir, inst, node)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var rows []results.Row
	for ii, inst := range instances {
		for mi, arm := range plan.Arms {
			keys := map[string]string{}
			for _, s := range arm.Steps {
				keys[s.ID] = s.Key
			}
			c := contexts.Context{Issue: "add is wrong", Blocks: []contexts.Block{
				{Path: fmt.Sprintf("pkg%d/calc.go", mi), Kind: contexts.KindFile, Start: 1, Text: "package pkg\n"},
				{Path: "<b>odd name</b>.go", Kind: contexts.KindFile, Start: 1, Text: "x\n"}}}
			ctxRef, err := cas.PutJSON(ctx, store, c)
			if err != nil {
				t.Fatal(err)
			}
			patchRef, _ := store.Put(ctx, []byte(attackPatch+fmt.Sprintf("// %s %s\n", inst, arm.Method)))
			logRef, _ := store.Put(ctx, []byte(attackLog+fmt.Sprintf("log of %s %s\n", inst, arm.Method)))
			memo(inst, keys["context"], ctxRef)
			memo(inst, keys["patch"], patchRef)
			memo(inst, keys["grade"], logRef)
			resolved := (ii+mi)%2 == 0
			rows = append(rows, results.Row{results.FieldInstance: inst, results.FieldMethod: arm.Method,
				results.FieldModel: "offline", specs.Resolved.Name: resolved, specs.PatchApplied.Name: true,
				specs.Rho.Name: 0.5 + 0.5*float64(mi), specs.Epsilon.Name: 1.0,
				specs.ContextTokens.Name: 1000.0 + float64(100*ii), results.FieldError: nil,
				"patch_ref": string(patchRef), "grade_status": "ran"})
		}
	}
	if _, err := (&results.Store{Path: filepath.Join(dir, "results.jsonl")}).Append(rows); err != nil {
		t.Fatal(err)
	}
}

// TestReportHTMLInChromium writes report.html for a run folder whose stored patches and test logs are hostile,
// checks the page's drill-down against the stored objects, then loads it in headless Chromium: the page renders
// (a real screenshot), lists every method and instance, and the hostile text is text, not markup (no script
// element, no image, the title unchanged). $CTXLAB_REPORT_SCREENSHOT, when set, names a file to keep the
// screenshot in.
func TestReportHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	runs := t.TempDir()
	instances := []string{"acme__calc-1", "acme__calc-2", "acme__parse-1"}
	methods := []string{"whole_files", "bm25_function", "cq2care"}
	htmlRunFolder(t, runs, instances, methods)
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"report", "exp", "--runs", runs, "--resamples", "200"}, &out, &errb); code != 0 {
		t.Fatalf("report exit %d: %s", code, errb.String())
	}
	if strings.Contains(errb.String(), "report.html") {
		t.Errorf("report.html problems: %s", errb.String())
	}
	path := filepath.Join(runs, "exp", "report.html")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	// Self-contained: no external resource of any kind; figures inlined.
	if m := regexp.MustCompile(`(?i)(src|href)="(https?:|//)[^"]*"`).FindString(page); m != "" {
		t.Errorf("external resource %s", m)
	}
	// resolve_ci and rho_epsilon; no budget sweep here.
	if n := strings.Count(page, `<img src="data:image/svg`); n != 2 {
		t.Errorf("%d figures inlined, want 2", n)
	}
	// The drill-down shows the stored objects and links them; the files of the context are listed.
	for _, want := range []string{"pkg2/calc.go", "&lt;b&gt;odd name&lt;/b&gt;.go", "// acme__parse-1 cq2care",
		"log of acme__calc-2 bm25_function", `href="cas/`} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}

	ctx := context.Background()
	url := "file://" + path
	dom := headless(ctx, t, bin, url, "--dump-dom")
	for _, m := range methods {
		if !strings.Contains(dom, ">"+m+"<") {
			t.Errorf("rendered page does not list method %s", m)
		}
	}
	for _, inst := range instances {
		if !strings.Contains(dom, inst+" — resolved by") {
			t.Errorf("rendered page has no drill-down for %s", inst)
		}
	}
	// The attack is visible as text and did nothing: no script or img element came from a row, the title stands.
	if strings.Contains(dom, "<script") || strings.Contains(dom, `<img src="x"`) {
		t.Errorf("hostile content became markup:\n%s", e2e.Tail(dom, 3000))
	}
	if !strings.Contains(dom, "&lt;/pre&gt;&lt;script&gt;document.title='pwned-patch'&lt;/script&gt;") {
		t.Errorf("the hostile patch is not shown as text")
	}
	if title := regexp.MustCompile(`<title>([^<]*)</title>`).FindStringSubmatch(dom); title == nil || title[1] != "Report: exp" {
		t.Errorf("page title %v: a script ran", title)
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	if keep := os.Getenv("CTXLAB_REPORT_SCREENSHOT"); keep != "" {
		shot = keep
	}
	headless(ctx, t, bin, url, "--screenshot="+shot)
	checkScreenshot(t, shot)
}
