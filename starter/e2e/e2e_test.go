package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ctxlab/demobench"
	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/starter/cli"
	"ctxlab/testkit/e2e"
)

// The end-to-end tests run the starter as a subprocess, the way a researcher does: the test binary re-executes
// itself with this variable set and becomes the starter, so there is no second build of the Temporal server.
const asStarter = "CTXLAB_TEST_AS_STARTER"

// sharedDir holds what the tests build once and share (the worker binary); removed when they end.
var sharedDir string

func TestMain(m *testing.M) {
	if os.Getenv(asStarter) == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	var err error
	if sharedDir, err = os.MkdirTemp("", "ctxlab-e2e-test"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stopSharedLlama()
	os.RemoveAll(sharedDir)
	os.Exit(code)
}

// starterEnvs holds, per test, the variables its starter subprocesses get on top of the test's environment: the
// end-to-end tests run in parallel, and t.Setenv would forbid that (and reach every test's subprocesses).
var starterEnvs sync.Map // *testing.T -> []string

// setStarterEnv adds KEY=VALUE pairs to the environment of the starters t runs.
func setStarterEnv(t *testing.T, kv ...string) {
	t.Helper()
	prev, _ := starterEnvs.Load(t)
	env, _ := prev.([]string)
	starterEnvs.Store(t, append(slices.Clone(env), kv...))
	t.Cleanup(func() { starterEnvs.Delete(t) })
}

// starter returns a command running the starter with args in dir.
func starter(ctx context.Context, t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	extra, _ := starterEnvs.Load(t)
	env, _ := extra.([]string)
	// Later entries win, so the test's variables override the inherited ones.
	cmd.Env = append(append(os.Environ(), env...), asStarter+"=1")
	return cmd
}

// demoSpec is the path of specs/demo.jsonnet.
func demoSpec(t *testing.T) string { return filepath.Join(e2e.RepoRoot(t), "specs", "demo.jsonnet") }

// referenceMethods keeps only the demo's two reference methods (no_source, oracle_files), which keeps a test quick,
// and hides the demo's budget anchor (cq2care), which they leave out.
const referenceMethods = "methods: super.methods[0:2], anchor:: null"

// demoTestCmd is the --test-cmd of the demo's grading (specs/demo.jsonnet's grading.test_cmd): its Python
// tests are unittest's.
var demoTestCmd = `{"python": "` + demobench.PythonTestCmd + `"}`

// testNamespace is an image namespace of this test process, so that two runs of the tests at once (two checkouts,
// or CI beside a developer) neither share nor remove each other's images.
func testNamespace(prefix string) string { return prefix + strconv.Itoa(os.Getpid()) }

// demoVariant writes a spec that is the demo spec with overrides (a Jsonnet object) applied, and returns its path.
func demoVariant(t *testing.T, overrides string) string {
	t.Helper()
	return e2e.DemoVariant(t, filepath.Join(t.TempDir(), "variant.jsonnet"), overrides)
}

func runStarter(t *testing.T, timeout time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return startStarter(t, timeout, args...)()
}

// startStarter starts the starter as runStarter does and returns at once; wait, called from the test's goroutine,
// waits for it and returns what runStarter returns. A test runs its reference run beside its other steps this way.
func startStarter(t *testing.T, timeout time.Duration, args ...string) (wait func() (stdout, stderr string, code int)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := starter(ctx, t, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starter %v: %v", args, err)
	}
	return func() (string, string, int) {
		t.Helper()
		defer cancel()
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("starter %v: %v", args, err)
		}
		if ctx.Err() != nil {
			t.Fatalf("starter %v did not finish in %s; stderr:\n%s", args, timeout, errb.String())
		}
		return out.String(), errb.String(), code
	}
}

// readRows returns the rows of a run keyed by (instance, method, model), without fields that measure time.
func readRows(t *testing.T, path string) map[results.Key]results.Row {
	t.Helper()
	return e2e.ReadRows(t, path, "grade_seconds")
}

func TestDemoSweepEndToEnd(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	spec := demoSpec(t)
	// A small history limit makes the sweep continue as new on the real server at least once.
	stdout, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--max-history", "15")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	dir := filepath.Join(runs, "demo")
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	instances, methods := map[string]bool{}, map[string]bool{}
	cq2careResolved := map[string]int{}
	for k, r := range rows {
		instances[k.Instance] = true
		for _, f := range results.Required {
			if _, ok := r[f]; !ok {
				t.Errorf("row %v lacks %s", k, f)
			}
		}
		if r[results.FieldError] != nil {
			t.Errorf("row %v has error %v", k, r[results.FieldError])
		}
		resolved, _ := r.Bool(specs.Resolved.Name)
		switch k.Method {
		case "oracle_files":
			if !resolved {
				t.Errorf("oracle_files did not resolve %s: %v", k.Instance, r)
			}
			if rho, _ := r.Float(specs.Rho.Name); rho != 1 {
				t.Errorf("oracle_files rho = %v on %s", rho, k.Instance)
			}
			if eps, _ := r.Float(specs.Epsilon.Name); eps != 1 {
				t.Errorf("oracle_files epsilon = %v on %s", eps, k.Instance)
			}
		case "no_source":
			if resolved {
				t.Errorf("no_source resolved %s", k.Instance)
			}
			if tok, _ := r.Float(specs.ContextTokens.Name); tok != 0 {
				t.Errorf("no_source shows %v tokens of source", tok)
			}
		case "cq2care", "cq2care_no_evidence", "cq2care_single_sample", "cq2care_patch_resample":
			if resolved {
				cq2careResolved[k.Method]++
			}
			calls, _ := r.Float(specs.ModelCalls.Name)
			if want := map[bool]float64{true: 4, false: 5}[k.Method == "cq2care_no_evidence"]; calls != want {
				t.Errorf("%v: model_calls %v, want %v", k, r[specs.ModelCalls.Name], want)
			}
			for _, f := range []string{specs.FilesSelected.Name, specs.Fallback.Name, specs.LocF1.Name,
				specs.PromptTokens.Name, specs.CostUSD.Name} {
				if r[f] == nil {
					t.Errorf("%v lacks %s", k, f)
				}
			}
		}
		// Other methods (the baselines) are held to the checks above: every required field, no error.
		methods[k.Method] = true
	}
	if len(instances) < 6 || len(methods) < 6 || len(rows) != len(methods)*len(instances) {
		t.Fatalf("%d rows for %d methods on %d instances; want one per method and instance, at least 6 instances",
			len(rows), len(methods), len(instances))
	}
	// The offline stand-in finds the gold files of all demo instances but one (PAPER.md: CQ2-CARE picks the right
	// files).
	if cq2careResolved["cq2care"] < len(instances)-1 {
		t.Errorf("cq2care resolved %d of %d instances", cq2careResolved["cq2care"], len(instances))
	}
	summary, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := len(instances)
	wants := []string{"| no_source | offline | " + strconv.Itoa(n) + " | 0.0 | 0.0 |",
		"| oracle_files | offline | " + strconv.Itoa(n) + " | 100.0 | 100.0 | 1.000 | 1.000 |"}
	for _, want := range wants {
		if !strings.Contains(string(summary), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, summary)
		}
	}
	if !strings.Contains(stdout, "oracle_files") {
		t.Errorf("stdout does not show the summary:\n%s", stdout)
	}
	if m := regexp.MustCompile(`generations=(\d+)`).FindStringSubmatch(stderr); m == nil || m[1] == "1" {
		t.Errorf("the sweep never continued as new although --max-history was small; stderr:\n%s", stderr)
	}

	// Running it again attaches to the finished sweep: same rows, nothing re-run.
	before, _ := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	attemptsBefore := countLines(t, filepath.Join(dir, "attempts.jsonl"))
	stdout2, stderr2, code := runStarter(t, 3*time.Minute, "run", spec, "--runs", runs)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, stderr2)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if !bytes.Equal(before, after) {
		t.Error("second run changed results.jsonl")
	}
	if got := countLines(t, filepath.Join(dir, "attempts.jsonl")); got != attemptsBefore {
		t.Errorf("second run started %d activities; want none", got-attemptsBefore)
	}
	if !strings.Contains(stderr2, "already finished") || !strings.Contains(stdout2, "oracle_files") {
		t.Errorf("second run did not attach to the finished sweep:\nstdout:\n%s\nstderr:\n%s", stdout2, stderr2)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// attemptEvents reads attempts.jsonl.
type attemptEvent struct {
	Time     time.Time `json:"time"`
	Event    string    `json:"event"`
	Instance string    `json:"instance"`
	Node     string    `json:"node"`
}

func readAttempts(t *testing.T, path string) []attemptEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []attemptEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e attemptEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// TestCrashResume kills the starter with SIGKILL in the middle of a slowed sweep, starts it again, and checks that
// the sweep completes with the results of an uninterrupted run and that no activity that had completed ran again.
func TestCrashResume(t *testing.T) {
	t.Parallel()
	spec := demoVariant(t, "{ name: 'slow', "+referenceMethods+", debug: { slow_activities: '400ms' }, "+
		"limits+: { concurrency: 3 } }")

	// The uninterrupted reference run, beside the killed one.
	refRuns := t.TempDir()
	reference := startStarter(t, 10*time.Minute, "run", spec, "--runs", refRuns, "--quiet")

	runs := t.TempDir()
	dir := filepath.Join(runs, "slow")
	attempts := filepath.Join(dir, "attempts.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Kill once some issues have written their rows and others are still running.
	e2e.KillWhen(t, starter(ctx, t, "run", spec, "--runs", runs, "--quiet"), "sweep made no progress",
		5*time.Minute, 100*time.Millisecond, func() bool { return e2e.RowCount(filepath.Join(dir, "results.jsonl")) >= 2 })
	killedAt := time.Now()
	doneBeforeKill := map[string]bool{}
	for _, e := range readAttempts(t, attempts) {
		if e.Event == "done" {
			doneBeforeKill[e.Instance+"/"+e.Node] = true
		}
	}
	rowsBefore := e2e.RowCount(filepath.Join(dir, "results.jsonl"))
	if _, stderr, code := reference(); code != 0 {
		t.Fatalf("reference run: exit %d\n%s", code, stderr)
	}
	want := readRows(t, filepath.Join(refRuns, "slow", "results.jsonl"))
	if rowsBefore >= len(want) {
		t.Fatalf("the kill came too late: all %d rows were already written", rowsBefore)
	}

	if _, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--quiet"); code != 0 {
		t.Fatalf("resumed run: exit %d\n%s", code, stderr)
	}
	got := readRows(t, filepath.Join(dir, "results.jsonl"))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results after a crash differ from an uninterrupted run's:\n got %v\nwant %v", keys(got), keys(want))
		for k, w := range want {
			if !reflect.DeepEqual(got[k], w) {
				t.Errorf("%v:\n got %v\nwant %v", k, got[k], w)
			}
		}
	}
	for _, e := range readAttempts(t, attempts) {
		if e.Time.After(killedAt) && e.Event == "start" && doneBeforeKill[e.Instance+"/"+e.Node] {
			t.Errorf("activity %s of %s had completed before the kill but started again", e.Node, e.Instance)
		}
	}
	t.Logf("killed with %d activities done and %d rows written; resumed to %d rows", len(doneBeforeKill),
		rowsBefore, len(got))
}

func keys(m map[results.Key]results.Row) []string {
	var out []string
	for k := range m {
		out = append(out, k.Instance+"/"+k.Method)
	}
	sort.Strings(out)
	return out
}

// TestChangedSpecStartsOver runs a spec, then a changed spec of the same name: the new sweep's results hold only
// its own rows (the old ones are put aside), and nodes the two specs share are not run again.
func TestChangedSpecStartsOver(t *testing.T) {
	t.Parallel()
	const base = "{ name: 'chg', dataset+: { limit: 2 }, " + referenceMethods + " }"
	both := demoVariant(t, base)
	one := demoVariant(t, base+" + { methods: [super.methods[0]] }")
	runs := t.TempDir()
	dir := filepath.Join(runs, "chg")
	if _, stderr, code := runStarter(t, 10*time.Minute, "run", both, "--runs", runs, "--quiet"); code != 0 {
		t.Fatalf("first spec: exit %d\n%s", code, stderr)
	}
	startsBefore := 0
	for _, e := range readAttempts(t, filepath.Join(dir, "attempts.jsonl")) {
		if e.Event == "start" {
			startsBefore++
		}
	}
	if _, stderr, code := runStarter(t, 10*time.Minute, "run", one, "--runs", runs, "--quiet"); code != 0 {
		t.Fatalf("changed spec: exit %d\n%s", code, stderr)
	}
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	if len(rows) != 2 {
		t.Errorf("results.jsonl has %d rows, want the changed spec's 2", len(rows))
	}
	for k := range rows {
		if k.Method != "no_source" {
			t.Errorf("row of a method the changed spec does not have: %v", k)
		}
	}
	old, _ := filepath.Glob(filepath.Join(dir, "previous", "*", "results.jsonl"))
	if len(old) != 1 || len(readRows(t, old[0])) != 4 {
		t.Errorf("the first spec's 4 rows were not put aside: %v", old)
	}
	starts, memo := 0, 0
	for _, e := range readAttempts(t, filepath.Join(dir, "attempts.jsonl")) {
		switch e.Event {
		case "start":
			starts++
		case "memo":
			memo++
		}
	}
	if starts != startsBefore || memo == 0 {
		t.Errorf("the changed spec ran %d activities again (memo hits %d); all its nodes were shared", starts-startsBefore, memo)
	}
}
