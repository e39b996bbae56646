package executor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
	"ctxlab/patch/diff"
	"ctxlab/testkit/filetree"
)

// A small Python project with a real bug, its fix and its new test, as a SWE-bench row describes them.
var (
	calcBase = map[string]string{
		"calc/__init__.py":   "",
		"calc/ops.py":        "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
		"tests/__init__.py":  "",
		"tests/test_mul.py":  "from calc.ops import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
		"README.md":          "calc\n",
		"tests/test_calc.py": "from calc.ops import mul\n\n\ndef test_mul_zero():\n    assert mul(0, 3) == 0\n",
	}
	calcGold = diff.Unified("calc/ops.py", []byte(calcBase["calc/ops.py"]),
		[]byte(strings.Replace(calcBase["calc/ops.py"], "a - b", "a + b", 1)))
)

func calcInstance() swebench.Instance {
	tp := diff.Unified("tests/test_calc.py", []byte(calcBase["tests/test_calc.py"]),
		[]byte("from calc.ops import add, mul\n\n\ndef test_mul_zero():\n    assert mul(0, 3) == 0\n\n\n"+
			"def test_add():\n    assert add(2, 3) == 5\n"))
	return swebench.Instance{
		InstanceID: "acme__calc-1", Repo: "acme/calc", BaseCommit: "0123456789abcdef0123456789abcdef01234567",
		ProblemStatement: "add subtracts", Patch: calcGold, TestPatch: tp,
		FailToPass: []string{"tests/test_calc.py::test_add"},
		// As in SWE-bench, the tests run are those of the files the test patch touches.
		PassToPass: []string{"tests/test_calc.py::test_mul_zero"},
	}
}

func materializer(files map[string]string) func(context.Context, string) error {
	return func(_ context.Context, dir string) error {
		for name, body := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

func python(t *testing.T) string {
	t.Helper()
	py, err := FindPython("", "pytest")
	if err != nil {
		t.Fatal(err)
	}
	return py
}

func decide(in swebench.Instance, res Result) testlog.Verdict {
	return testlog.DecideInstance(in, res.Report)
}

func TestImageName(t *testing.T) {
	for id, want := range map[string]string{
		"django__django-11099":   "swebench/sweb.eval.x86_64.django_1776_django-11099:latest",
		"Astropy__Astropy-12907": "swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest",
	} {
		if got := ImageName("", id); got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	if got := ImageName("swerebench", "a__b-1"); got != "swerebench/sweb.eval.x86_64.a_1776_b-1:latest" {
		t.Errorf("namespace: %s", got)
	}
}

func TestLocalPython(t *testing.T) {
	py := python(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	in := calcInstance()
	req := Request{Instance: in, Materialize: materializer(calcBase), Timeout: 2 * time.Minute,
		Config: Config{Python: py}}
	ctx := context.Background()

	req.Patch = in.Patch
	res, err := Local{}.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); !v.Resolved || res.Apply.Outcome != diff.Applied {
		t.Fatalf("gold patch: %+v %+v\n%s", v, res.Apply, res.Output)
	}
	// As in the harness, the model's edits to the test patch's files are discarded before the test patch applies:
	// a patch that also breaks a test there still resolves, and does not conflict with the test patch.
	req.Patch = in.Patch + diff.Unified("tests/test_calc.py", []byte(calcBase["tests/test_calc.py"]),
		[]byte(strings.Replace(calcBase["tests/test_calc.py"], "== 0", "== 1", 1)))
	res, err = Local{}.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); !v.Resolved {
		t.Fatalf("gold patch with a test edit: %+v\n%s", v, res.Output)
	}
	req.Patch = ""
	res, err = Local{}.Run(ctx, req)
	if err != nil || res.Ran || res.Apply.Outcome != diff.Empty {
		t.Fatalf("empty patch: %+v %v", res, err)
	}
	// A wrong fix runs and is not resolved.
	req.Patch = strings.Replace(in.Patch, "a + b", "a * b", 1)
	res, err = Local{}.Run(ctx, req)
	if err != nil || !res.Ran || decide(in, res).Resolved {
		t.Fatalf("wrong fix: %+v %v", decide(in, res), err)
	}
	// unittest through a spec's command.
	req.Patch = in.Patch
	req.Config.TestCmd = py + " -m unittest -v tests.test_mul"
	ut := in
	ut.FailToPass, ut.PassToPass = []string{"tests.test_mul.test_mul"}, nil
	req.Instance = ut
	res, err = Local{}.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// test_mul is a plain function, so unittest finds no test in it: it must count as missing, not as passing.
	if v := decide(ut, res); v.Resolved || len(v.Missing) != 1 {
		t.Errorf("unittest with no such test: %+v\n%s", v, res.Output)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("worktrees left behind: %v", left)
	}
}

func TestCleanStale(t *testing.T) {
	tmp := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(tmp, TempPrefix+strconv.Itoa(dead.Process.Pid)+"-123")
	live := filepath.Join(tmp, TempPrefix+strconv.Itoa(os.Getppid())+"-456")
	mine := filepath.Join(tmp, TempPrefix+strconv.Itoa(os.Getpid())+"-789")
	other := filepath.Join(tmp, "someone-else")
	for _, d := range []string{stale, live, mine, other} {
		filetree.Write(t, d, map[string]string{"f": "x"})
	}
	n, err := CleanStale(tmp)
	if err != nil || n != 1 {
		t.Fatalf("removed %d, %v", n, err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("stale folder kept")
	}
	for _, d := range []string{live, mine, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed", d)
		}
	}
}

// fakeDocker builds testkit/fakedocker and configures it. It returns the program and the path of its call log.
type fake struct {
	bin, log, root string
}

func newFakeDocker(t *testing.T, rec replay, hang bool) fake {
	t.Helper()
	dir := t.TempDir()
	f := fake{bin: filepath.Join(dir, "docker"), log: filepath.Join(dir, "calls.jsonl"), root: filepath.Join(dir, "container")}
	build := exec.Command("go", "build", "-o", f.bin, "ctxlab/testkit/fakedocker")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fake docker: %v\n%s", err, out)
	}
	replayFile, channelFile := filepath.Join(dir, "replay.log"), filepath.Join(dir, "channel")
	if err := os.WriteFile(replayFile, []byte(rec.log), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(channelFile, []byte(rec.channel), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"log": f.log, "root": f.root, "replay": replayFile, "channel": channelFile,
		"hang": hang})
	if err := os.WriteFile(f.bin+".json", cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	testbed := map[string]string{}
	for k, v := range calcBase {
		testbed["testbed/"+k] = v
	}
	filetree.Write(t, f.root, testbed)
	return f
}

type call struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
}

func (f fake) calls(t *testing.T) []call {
	t.Helper()
	b, err := os.ReadFile(f.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []call
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var c call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// replay is what a container's eval script writes, which the fake docker replays: its log (the container's stderr)
// and its results channel (its stdout).
type replay struct{ log, channel string }

// realLog runs the instance's tests with real pytest on the patched project, with ctxlab's results plugin on
// descriptor 3 as in a container, and returns the output wrapped as the eval script prints it (set -x traces, the
// markers, and noise outside them that must be ignored) and the channel the plugin and the script wrote.
func realLog(t *testing.T, in swebench.Instance, patch string) replay {
	t.Helper()
	py := python(t)
	dir := t.TempDir()
	filetree.Write(t, dir, calcBase)
	for _, p := range []string{in.TestPatch, patch} {
		if _, err := diff.ApplyDir(dir, p); err != nil {
			t.Fatal(err)
		}
	}
	helpers := t.TempDir()
	entries, err := pythonHelpers.ReadDir("python")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := pythonHelpers.ReadFile("python/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		filetree.Write(t, helpers, map[string]string{e.Name(): string(b)})
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-m", "pytest", "-p", resultsPluginModule, "-rA", "-p", "no:cacheprovider", "tests/test_calc.py")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+helpers, resultsFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}
	var channel []byte
	read := make(chan struct{})
	go func() { channel, _ = io.ReadAll(r); close(read) }()
	out, _ := cmd.CombinedOutput()
	w.Close()
	<-read
	r.Close()
	return replay{log: "+ git status\nFAILED tests/test_calc.py::test_mul_zero - noise before the markers\n" +
		"+ git apply -v -\nChecking patch tests/test_calc.py...\nApplied patch tests/test_calc.py cleanly.\n" +
		"+ : '" + StartTestOutput + "'\n+ pytest -rA tests/test_calc.py\n" + string(out) +
		"+ : '" + EndTestOutput + "'\nPASSED tests/test_calc.py::test_add\n+ git checkout\n",
		channel: string(channel) + fmt.Sprintf("ctxlab1\texit\t%d\n", cmd.ProcessState.ExitCode())}
}

func TestDockerWithFakeDocker(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-should-not-leak")
	t.Setenv("GITHUB_TOKEN", "should-not-leak")
	t.Setenv("TMPDIR", t.TempDir())
	in := calcInstance()
	f := newFakeDocker(t, realLog(t, in, in.Patch), false)
	req := Request{Instance: in, Patch: in.Patch, Timeout: time.Minute, Config: Config{Docker: f.bin}}
	res, err := Docker{}.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); !v.Resolved || res.Apply.Outcome != diff.Applied {
		t.Fatalf("gold patch through docker: %+v %+v note %q\n%s", v, res.Apply, res.Note, res.Output)
	}
	// The patch reached the container's /testbed, and the eval script has the harness's shape.
	b, _ := os.ReadFile(filepath.Join(f.root, "testbed", "calc", "ops.py"))
	if !strings.Contains(string(b), "a + b") {
		t.Errorf("container's calc/ops.py not patched: %q", b)
	}
	script, _ := os.ReadFile(filepath.Join(f.root, "eval.sh"))
	for _, want := range []string{"set -uxo pipefail", "conda activate testbed", "cd /testbed",
		"git checkout " + in.BaseCommit + " tests/test_calc.py", "git apply -v - <<'EOF_114329324912'",
		"exec 3>&1 1>&2\n{\n",
		": '>>>>> Start Test Output'\nexport CTXLAB_RESULTS_FD=3 PYTHONPATH=\"$CTXLAB_HELPERS${PYTHONPATH:+:$PYTHONPATH}\"\n" +
			"{\npytest -p ctxlab_results -rA tests/test_calc.py\n}\nSWEBENCH_TEST_EXIT_CODE=$?\n",
		"CTXLAB_HELPERS=$(mktemp -d)\ncat > \"$CTXLAB_HELPERS/ctxlab_results.py\" <<'CTXLAB_HELPER_EOF'\n"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("eval.sh lacks %q:\n%s", want, script)
		}
	}
	calls := f.calls(t)
	// Before create: the sweep of dead graders' containers (ps) and the image check (image inspect).
	if len(calls) < 3 || calls[0].Args[0] != "ps" || calls[1].Args[0] != "image" || calls[2].Args[0] != "create" {
		t.Fatalf("calls: %v", calls)
	}
	create := calls[2].Args
	image := "swebench/sweb.eval.x86_64.acme_1776_calc-1:latest"
	if !slices.Contains(create, image) || !slices.Contains(create, "--network") ||
		create[slices.Index(create, "--network")+1] != "none" {
		t.Errorf("create: %v", create)
	}
	for _, c := range calls {
		for _, a := range c.Args {
			if a == "-e" || a == "--env" || strings.HasPrefix(a, "--env") || strings.Contains(a, "sk-should") {
				t.Errorf("docker %v passes variables into the container", c.Args)
			}
		}
		for _, k := range c.Env {
			if strings.Contains(k, "KEY") || strings.Contains(k, "TOKEN") {
				t.Errorf("docker %s ran with %s in its environment", c.Args[0], k)
			}
		}
	}
	if last := calls[len(calls)-1].Args; last[0] != "rm" || last[1] != "-f" {
		t.Errorf("container not removed last: %v", last)
	}
	if !slices.ContainsFunc(calls, func(c call) bool {
		return c.Args[0] == "exec" && slices.Equal(c.Args[2:], []string{"/bin/bash", "/eval.sh"})
	}) {
		t.Error("eval script not run")
	}
	// Text outside the markers did not count: the noise line's FAILED would otherwise fail test_mul_zero.
	if rs := res.Report.Tests["tests/test_calc.py::test_mul_zero"]; len(rs) != 1 || rs[0].Status != testlog.StatusPass {
		t.Errorf("test_mul_zero = %v", rs)
	}
}

func TestDockerRefusesBeforeTouchingDocker(t *testing.T) {
	in := calcInstance()
	f := newFakeDocker(t, replay{}, false)
	for patch, want := range map[string]diff.Outcome{
		"": diff.Empty, "garbage\n": diff.Malformed, diff.Unified("../../etc/x", nil, []byte("x\n")): diff.Escapes,
		"--- /dev/null\n+++ /etc/passwd\n@@ -0,0 +1 @@\n+x\n": diff.Escapes,
	} {
		res, err := Docker{}.Run(context.Background(), Request{Instance: in, Patch: patch, Config: Config{Docker: f.bin}})
		if err != nil || res.Ran || res.Apply.Outcome != want {
			t.Errorf("%q: %+v %v", patch, res.Apply, err)
		}
	}
	if calls := f.calls(t); len(calls) != 0 {
		t.Errorf("docker was called: %v", calls)
	}
}

func TestDockerTimeoutAndMissingMarkers(t *testing.T) {
	in := calcInstance()
	f := newFakeDocker(t, replay{}, true)
	start := time.Now()
	res, err := Docker{}.Run(context.Background(), Request{Instance: in, Patch: in.Patch, Timeout: 2 * time.Second,
		Config: Config{Docker: f.bin}})
	if err != nil || !res.TimedOut || decide(in, res).Resolved {
		t.Fatalf("hang: %+v %v", res, err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %s", d)
	}
	calls := f.calls(t)
	if last := calls[len(calls)-1].Args; last[0] != "rm" {
		t.Errorf("container not removed after the timeout: %v", last)
	}

	// A log without the end marker (the script died mid-run) counts no test, whatever it printed: for a command
	// whose log is parsed (tox), and for one read through the results helper, whose channel stayed empty.
	log := replay{log: "+ : '" + StartTestOutput + "'\n============ short test summary info ============\n" +
		"PASSED tests/test_calc.py::test_add\nPASSED tests/test_calc.py::test_mul_zero\n============ 2 passed ============\n"}
	for cmd, note := range map[string]string{"tox -e py": "markers are missing", "": noteHelperNeverStarted} {
		g := newFakeDocker(t, log, false)
		res, err = Docker{}.Run(context.Background(), Request{Instance: in, Patch: in.Patch, Timeout: time.Minute,
			Config: Config{Docker: g.bin, TestCmd: cmd}})
		if err != nil || !strings.Contains(res.Note, note) || decide(in, res).Resolved || len(res.Report.Tests) != 0 {
			t.Fatalf("%q, missing end marker: %+v %v", cmd, res, err)
		}
	}
}
