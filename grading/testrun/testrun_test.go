package testrun

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ctxlab/grading/testlog"
)

// module writes a Go module with the given test file bodies (package m) into a temp folder.
func module(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{"go.mod": "module example.com/m\n\ngo 1.21\n"}
	for name, body := range files {
		all[name] = body
	}
	for name, body := range all {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func status(rep testlog.Report, name string) string {
	var s []string
	for _, r := range rep.Tests[name] {
		s = append(s, string(r.Status))
	}
	return strings.Join(s, ",")
}

func TestRunPattern(t *testing.T) {
	got := RunPattern([]string{"TestB", "TestA/sub case", "TestA", "Test.Weird+", " ", "TestA/other"})
	want := `^(TestA|TestB|Test\.Weird\+)$`
	if got != want {
		t.Fatalf("RunPattern = %q, want %q", got, want)
	}
	re := regexp.MustCompile(got)
	if !re.MatchString("TestA") || re.MatchString("TestAB") || re.MatchString("TestXWeird+") {
		t.Fatal("pattern matches the wrong names")
	}
	if RunPattern(nil) != "" {
		t.Fatal("empty list should give no pattern")
	}
}

func TestPassAndFailReported(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{
		"m_test.go": `package m

import "testing"

func TestGood(t *testing.T) {}
func TestBad(t *testing.T)  { t.Error("wrong answer") }
func TestTable(t *testing.T) {
	t.Run("one", func(t *testing.T) {})
	t.Run("two", func(t *testing.T) { t.Fatal("two failed") })
}
func TestNotRequested(t *testing.T) {}
`,
		"sub/sub_test.go": "package sub\n\nimport \"testing\"\n\nfunc TestGood(t *testing.T) {}\n",
	})
	res, err := Go(context.Background(), Options{Dir: dir, Tests: []string{"TestGood", "TestBad", "TestTable/one"}, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"TestGood": "pass,pass", "TestBad": "fail", "TestTable": "fail", "TestTable/one": "pass", "TestTable/two": "fail",
		"TestNotRequested": "",
	} {
		if got := status(res.Report, name); got != want {
			t.Errorf("%s: %q, want %q\n%s", name, got, want, res.Output)
		}
	}
	if res.TimedOut || res.ExitCode != 1 {
		t.Errorf("TimedOut %v, exit %d; want false, 1", res.TimedOut, res.ExitCode)
	}
	if !bytes.Contains(res.Output, []byte("wrong answer")) || res.OutputBytes != int64(len(res.Output)) {
		t.Errorf("output not captured whole (%d of %d bytes)", len(res.Output), res.OutputBytes)
	}
	if v := testlog.Decide([]string{"TestTable/one"}, []string{"TestGood"}, res.Report); !v.Resolved {
		t.Errorf("verdict %+v", v)
	}
}

// processGone reports whether pid no longer runs (a zombie waiting for its reaper counts as gone).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// Format: pid (comm) state ...
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] == 'Z'
	}
	return false
}

func TestTimeoutKillsWholeGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	dir := module(t, map[string]string{
		"m_test.go": `package m

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

func TestForever(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(os.Getenv("PID_FILE"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	time.Sleep(time.Hour)
}
`,
	})
	// Warm the build cache so the budget is spent running, not compiling.
	if _, err := Go(context.Background(), Options{Dir: dir, Tests: []string{"TestNoSuchTest"}, Timeout: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	// 10 s: enough for the test binary to start on a loaded machine (two cores shared with other test packages).
	const limit = 10 * time.Second
	start := time.Now()
	res, err := Go(context.Background(), Options{Dir: dir, Tests: []string{"TestForever"}, Timeout: limit,
		ExtraEnv: []string{"PID_FILE=" + pidFile}})
	if err != nil {
		t.Fatalf("a timeout must not be an error: %v", err)
	}
	took := time.Since(start)
	if !res.TimedOut {
		t.Fatalf("TimedOut not set; exit %d\n%s", res.ExitCode, res.Output)
	}
	// The binary stops itself at its -test.timeout, a tenth of the budget before the run's deadline, and dumps the
	// running test's stack, as under go test.
	if took < limit-limit/10-time.Second || took > limit+drainWait+2*time.Second {
		t.Errorf("run took %v for a %v timeout", took, limit)
	}
	if !strings.Contains(string(res.Output), "test timed out after") || !strings.Contains(string(res.Output), "TestForever") {
		t.Errorf("no stack dump of the timed-out test in the output:\n%s", res.Output)
	}
	if got := status(res.Report, "TestForever"); got != "fail" {
		t.Errorf("killed test status %q, want fail", got)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the test never started its child (slower than the timeout to start?): %v\n%s", err, res.Output)
	}
	pid, _ := strconv.Atoi(string(b))
	deadline := time.Now().Add(3 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child sleep (pid %d) survived the timeout", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCancelKillsGroup(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{
		"m_test.go": "package m\n\nimport (\"testing\"; \"time\")\n\nfunc TestSlow(t *testing.T) { time.Sleep(time.Hour) }\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	res, err := Go(ctx, Options{Dir: dir, Timeout: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancellation: err %v after %s (exit %d); output:\n%s", err, time.Since(start).Round(time.Millisecond),
			res.ExitCode, res.Output)
	}
	if res.TimedOut {
		t.Error("a cancelled run is not a timeout of the run's own budget")
	}
	if d := time.Since(start); d > 2*time.Second+drainWait+2*time.Second {
		t.Errorf("cancelled run took %v", d)
	}
}

func TestEnvironmentIsAllowlisted(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-should-not-leak")
	t.Setenv("GITHUB_TOKEN", "ghp-should-not-leak")
	t.Setenv("MY_SECRET_THING", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "x")
	t.Setenv("GOPROXY", "https://proxy.example.com")
	out := filepath.Join(t.TempDir(), "env.txt")
	dir := module(t, map[string]string{
		"m_test.go": `package m

import (
	"os"
	"strings"
	"testing"
)

func TestDumpEnv(t *testing.T) {
	if err := os.WriteFile(os.Getenv("ENV_OUT"), []byte(strings.Join(os.Environ(), "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}
`,
	})
	res, err := Go(context.Background(), Options{Dir: dir, Tests: []string{"TestDumpEnv"}, Timeout: 2 * time.Minute,
		ExtraEnv: []string{"ENV_OUT=" + out, "CTXLAB_EXTRA=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := status(res.Report, "TestDumpEnv"); got != "pass" {
		t.Fatalf("env test %q\n%s", got, res.Output)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	t.Logf("tests saw: %v", keys(env))
	secret := regexp.MustCompile(`(?i)(_API_KEY$|_TOKEN$|SECRET|PASSWORD|CREDENTIAL)`)
	for k := range env {
		if secret.MatchString(k) {
			t.Errorf("%s reached the tests", k)
		}
	}
	if env["GOPROXY"] != "off" || env["GOTOOLCHAIN"] != "local" || env["CTXLAB_EXTRA"] != "1" {
		t.Errorf("GOPROXY=%q GOTOOLCHAIN=%q CTXLAB_EXTRA=%q", env["GOPROXY"], env["GOTOOLCHAIN"], env["CTXLAB_EXTRA"])
	}
	if _, ok := env["PATH"]; !ok {
		t.Error("PATH missing")
	}
	// Only allowlisted, forced and extra names, plus what the go command sets for test binaries itself.
	allowed := map[string]bool{"GOTOOLCHAIN": true, "GOPROXY": true, "ENV_OUT": true, "CTXLAB_EXTRA": true, "": true}
	for _, k := range AllowedEnv {
		allowed[k] = true
	}
	for k := range env {
		if !allowed[k] && !strings.HasPrefix(k, "GO") && k != "PWD" {
			t.Errorf("unexpected variable %s in the tests' environment", k)
		}
	}
}

func TestOutputCapKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{
		"m_test.go": `package m

import (
	"fmt"
	"testing"
)

func TestNoisy(t *testing.T) {
	for i := 0; i < 4000; i++ {
		fmt.Printf("noise line %d %s\n", i, "0123456789012345678901234567890123456789")
	}
}
`,
	})
	const limit = 16 << 10
	res, err := Go(context.Background(), Options{Dir: dir, Tests: []string{"TestNoisy"}, OutputCap: limit, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.OutputBytes < 200<<10 {
		t.Fatalf("only %d bytes produced", res.OutputBytes)
	}
	if len(res.Output) > limit+200 {
		t.Fatalf("output %d bytes, cap %d", len(res.Output), limit)
	}
	m := regexp.MustCompile(`\[ctxlab: (\d+) bytes of output dropped here; (\d+) bytes in all\]`).FindSubmatch(res.Output)
	if m == nil {
		t.Fatalf("no truncation marker in output")
	}
	dropped, _ := strconv.ParseInt(string(m[1]), 10, 64)
	if want := res.OutputBytes - int64(limit); dropped != want {
		t.Errorf("marker says %d dropped, want %d", dropped, want)
	}
	if !bytes.Contains(res.Output[:limit/2], []byte(`"Action":"start"`)) || !bytes.Contains(res.Output, []byte(`"Action":"pass","Package":"example.com/m","Elapsed"`)) {
		t.Errorf("head or tail missing:\n%s\n...\n%s", res.Output[:300], res.Output[len(res.Output)-300:])
	}
	// The report comes from the whole stream: the test's result survives the cap.
	if got := status(res.Report, "TestNoisy"); got != "pass" {
		t.Errorf("TestNoisy %q after capping", got)
	}
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{
		"m_test.go": "package m\n\nimport (\"testing\"; \"time\")\n\nfunc TestWait(t *testing.T) { time.Sleep(3 * time.Second) }\n",
	})
	var beats atomic.Int64
	res, err := Go(context.Background(), Options{Dir: dir, Timeout: 2 * time.Minute, Heartbeat: func() { beats.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if status(res.Report, "TestWait") != "pass" {
		t.Fatalf("TestWait did not pass:\n%s", res.Output)
	}
	n := beats.Load()
	if min := int64(res.Duration/DefaultHeartbeatEvery) - 1; n < 1 || n < min {
		t.Errorf("%d heartbeats in %v", n, res.Duration)
	}
	time.Sleep(DefaultHeartbeatEvery + 200*time.Millisecond)
	if beats.Load() != n {
		t.Error("heartbeat called after Go returned")
	}
}

func TestCannotStart(t *testing.T) {
	if _, err := Go(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("no error for a missing folder")
	}
	if _, err := Go(context.Background(), Options{}); err == nil {
		t.Fatal("no error for an empty Dir")
	}
}

func TestCapBuffer(t *testing.T) {
	c := newCapBuffer(10)
	_, _ = c.Write([]byte("abc"))
	if string(c.Bytes()) != "abc" {
		t.Fatalf("small write: %q", c.Bytes())
	}
	for _, s := range []string{"defgh", "ijklmnop", "qrstuvwxyz"} {
		_, _ = c.Write([]byte(s))
	}
	got := string(c.Bytes())
	if !strings.HasPrefix(got, "abcde\n[ctxlab: 16 bytes of output dropped here; 26 bytes in all]\n") || !strings.HasSuffix(got, "vwxyz") {
		t.Fatalf("capped: %q", got)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
