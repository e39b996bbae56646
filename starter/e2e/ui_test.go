package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/testkit/e2e"
)

// chromium finds a headless-capable Chromium: $CTXLAB_CHROMIUM, Debian's /usr/bin/chromium, or chromium on PATH.
// Without one the test is skipped, unless CTXLAB_REQUIRE_BROWSER=1 (CI) makes it fail.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CTXLAB_CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	msg := "no chromium: install Debian's with `apt-get install -y chromium`, or set CTXLAB_CHROMIUM to a Chromium binary"
	if os.Getenv("CTXLAB_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg + " (CTXLAB_REQUIRE_BROWSER=1)")
	}
	t.Skip(msg)
	return ""
}

// headless runs chromium on url with extra flags (--dump-dom or --screenshot) and returns its stdout.
func headless(ctx context.Context, t *testing.T, bin, url string, extra ...string) string {
	t.Helper()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1400,900",
		// Virtual time runs only while the page has no network request pending, so the budget is spent after
		// the single-page app has fetched the workflow list and rendered it.
		"--virtual-time-budget=15000"}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append(args, extra...), url)...)
	// Chromium forks helpers: kill the whole group if it hangs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, e2e.Tail(errb.String(), 2000))
	}
	return out.String()
}

// TestWebUIShowsSweep runs a small sweep with --ui, then serves its folder with `starter ui` and loads the
// workflow list in headless Chromium: the page must list the sweep's workflow and one workflow per issue that has
// rows, and the screenshot must be a real picture. $CTXLAB_UI_SCREENSHOT, when set, names a file to keep it in.
func TestWebUIShowsSweep(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	start := time.Now()
	phase := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	runs := t.TempDir()
	spec := demoVariant(t, "{ name: 'uiview', "+referenceMethods+" }")
	_, errRun, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--ui", "--quiet")
	if code != 0 {
		t.Fatalf("starter run --ui: exit %d\n%s", code, errRun)
	}
	if !regexp.MustCompile(`(?m)^Temporal Web UI: http://127\.0\.0\.1:\d+$`).MatchString(errRun) {
		t.Errorf("starter run --ui printed no UI address:\n%s", errRun)
	}
	phase("sweep with --ui done")
	var want []string // workflow ids that must be listed, from the sweep's own rows
	seen := map[string]bool{}
	for k := range readRows(t, filepath.Join(runs, "uiview", "results.jsonl")) {
		id := "issue/uiview/" + k.Instance
		if !seen[id] {
			seen[id] = true
			want = append(want, id)
		}
	}
	if len(want) < 5 {
		t.Fatalf("the sweep has rows for only %d issues", len(want))
	}
	want = append(want, "sweep/uiview")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ui := starter(ctx, t, "ui", "uiview", "--runs", runs)
	stderrPipe, err := ui.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ui.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var uiErr bytes.Buffer
	listURL := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderrPipe)
		for sc.Scan() {
			line := sc.Text()
			uiErr.WriteString(line + "\n")
			if u, ok := strings.CutPrefix(strings.TrimSpace(line), "workflows: "); ok {
				listURL <- u
			}
		}
		exited <- ui.Wait()
	}()
	var u string
	select {
	case u = <-listURL:
	case err := <-exited:
		t.Fatalf("starter ui exited before serving: %v\n%s", err, uiErr.String())
	case <-ctx.Done():
		t.Fatal("starter ui printed no address")
	}
	defer func() {
		if ui.ProcessState == nil {
			_ = ui.Process.Kill()
		}
	}()

	phase("starter ui serving")
	dom := headless(ctx, t, bin, u, "--dump-dom")
	phase("page loaded in chromium")
	for _, id := range want {
		// As text of an element (a link to its history), not only inside an attribute.
		if !regexp.MustCompile(`>\s*` + regexp.QuoteMeta(id) + `\s*<`).MatchString(dom) {
			t.Errorf("the workflow list in the browser does not show %s", id)
		}
	}
	if t.Failed() {
		t.Logf("DOM (tail):\n%s", e2e.Tail(dom, 3000))
	}

	// A workflow's own page, as a click on the list opens it: behind the guard, its page route (the id encoded in
	// it) and the API reads it makes (describe, history) must answer, so its type and its result show.
	link := regexp.MustCompile(`href="([^"]*sweep%2Fuiview[^"]*)"`).FindStringSubmatch(dom)
	if link == nil {
		t.Fatalf("the workflow list links no page of sweep/uiview:\n%s", e2e.Tail(dom, 3000))
	}
	detail := strings.TrimSuffix(u, "/namespaces/default/workflows") + strings.ReplaceAll(link[1], "&amp;", "&")
	detailDOM := headless(ctx, t, bin, detail, "--dump-dom")
	phase("workflow page loaded in chromium")
	for _, want := range []string{"Workflow Type", ">Sweep<", "# ctxlab: uiview"} {
		if !strings.Contains(detailDOM, want) {
			t.Errorf("the page %s does not show %q; DOM (tail):\n%s", detail, want, e2e.Tail(detailDOM, 3000))
		}
	}

	shot := filepath.Join(t.TempDir(), "workflows.png")
	headless(ctx, t, bin, u, "--screenshot="+shot)
	phase("screenshot taken")
	checkScreenshot(t, shot)
	if keep := os.Getenv("CTXLAB_UI_SCREENSHOT"); keep != "" {
		if b, err := os.ReadFile(shot); err == nil {
			if err := os.WriteFile(keep, b, 0o644); err != nil {
				t.Log(err)
			}
		}
	}

	// A run of the sweep while the viewer holds the folder attaches to the viewer's server and, since the viewer
	// runs no workers, brings its own: a changed spec (more retries) makes it run the whole sweep again.
	changed := demoVariant(t, "{ name: 'uiview', "+referenceMethods+", limits+: { retries: 5 } }")
	_, errAgain, code := runStarter(t, 5*time.Minute, "run", changed, "--runs", runs)
	if code != 0 {
		t.Fatalf("starter run beside starter ui: exit %d\n%s", code, errAgain)
	}
	if !strings.Contains(errAgain, "another starter runs this sweep") {
		t.Errorf("starter run did not attach to the viewer's server:\n%s", errAgain)
	}
	if n := len(readRows(t, filepath.Join(runs, "uiview", "results.jsonl"))); n != 2*(len(want)-1) {
		t.Errorf("the sweep run beside the viewer wrote %d rows, want %d", n, 2*(len(want)-1))
	}

	phase("sweep beside starter ui done")

	// Ctrl-C stops the viewer cleanly.
	if err := ui.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("starter ui after Ctrl-C: %v\n%s", err, uiErr.String())
		}
	case <-time.After(time.Minute):
		t.Error("starter ui did not stop within a minute of Ctrl-C")
	}
}

// checkScreenshot checks that path is a PNG of the window's size showing more than a blank page.
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 900 {
		t.Errorf("screenshot is %dx%d, want 1400x900", b.Dx(), b.Dy())
	}
	if n := colours(img); n < 50 {
		t.Errorf("screenshot has %d colours: a blank or nearly blank page", n)
	}
}

func colours(img image.Image) int {
	seen := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[(r>>8)<<16|(g>>8)<<8|bl>>8] = true
		}
	}
	return len(seen)
}

// TestWebUIGuardKeepsSweepWhole runs a sweep with --ui and, while its Issue workflows run, sends the UI writes
// disguised as reads (encoded and double-encoded slashes that make a path look like a query, dot segments) and
// the plain writes: each must be refused with 403 while the reads a researcher's pages make answer 200, and the
// sweep must finish with a row for every (instance, method).
func TestWebUIGuardKeepsSweepWhole(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	runs := t.TempDir()
	spec := demoVariant(t, "{ name: 'uiguard', "+referenceMethods+" }")
	run := starter(ctx, t, "run", spec, "--runs", runs, "--ui", "--quiet")
	stderrPipe, err := run.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	var runErr bytes.Buffer
	uiURL := make(chan string, 1)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderrPipe)
		for sc.Scan() {
			runErr.WriteString(sc.Text() + "\n")
			if u, ok := strings.CutPrefix(sc.Text(), "Temporal Web UI: "); ok {
				uiURL <- u
			}
		}
		exited <- run.Wait()
	}()
	var base string
	select {
	case base = <-uiURL:
	case err := <-exited:
		t.Fatalf("starter run --ui ended before serving the UI: %v", err)
	case <-ctx.Done():
		t.Fatal("starter run --ui printed no UI address")
	}
	defer func() {
		if run.ProcessState == nil {
			_ = run.Process.Kill()
		}
	}()

	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	api := base + "/api/v1/namespaces/default"
	if status, body := uiSend(ctx, t, hc, "GET", base+"/namespaces/default/workflows", "", ""); status != http.StatusOK {
		t.Fatalf("the workflows page: %d %.300s", status, body)
	}
	token := ""
	u, _ := url.Parse(base)
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "_csrf" {
			token = ck.Value
		}
	}
	if token == "" {
		t.Fatal("the UI set no _csrf cookie")
	}

	// Wait until an Issue workflow runs, so the attacks meet a sweep in progress.
	running := api + "/workflows?query=" + url.QueryEscape("WorkflowType='Issue' AND ExecutionStatus='Running'")
	var issueID string
	for issueID == "" {
		status, body := uiSend(ctx, t, hc, "GET", running, "", "")
		if status != http.StatusOK {
			t.Fatalf("list of running Issue workflows through the UI: %d %.300s", status, body)
		}
		if m := regexp.MustCompile(`"workflowId":\s*"(issue/uiguard/[^"]+)"`).FindStringSubmatch(body); m != nil {
			issueID = m[1]
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the sweep ended (%v) before an Issue workflow was seen running:\n%s", err, runErr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	esc := url.PathEscape(issueID) // the UI encodes ids once: issue%2Fuiguard%2F...

	// The reads of the pages a researcher uses.
	for _, p := range []string{"/workflows/" + esc, "/workflows/" + esc + "/history", "/workflows/" + esc + "/history-reverse"} {
		if status, body := uiSend(ctx, t, hc, "GET", api+p, "", ""); status != http.StatusOK {
			t.Errorf("GET %s: %d %.300s", p, status, body)
		}
	}
	batch := `{"jobId":"JOB","namespace":"default","visibilityQuery":"WorkflowType='Issue'","reason":"ui",` +
		`"terminationOperation":{}}`
	attacks := []struct{ name, method, path, body string }{
		{"batch terminate of every Issue", "POST", "/batch-operations/%2Fworkflows%2Fquery%2F",
			strings.ReplaceAll(batch, "JOB", "/workflows/query/")},
		{"batch terminate, lower-case escapes", "POST", "/batch-operations/%2fworkflows%2fquery%2f1",
			strings.ReplaceAll(batch, "JOB", "/workflows/query/1")},
		{"batch terminate, double-encoded", "POST", "/batch-operations/%252Fworkflows%252Fquery%252F",
			strings.ReplaceAll(batch, "JOB", "%2Fworkflows%2Fquery%2F")},
		{"signal named x/query/y", "POST", "/workflows/" + esc + "/signal/x%2Fquery%2Fy", `{}`},
		{"terminate", "POST", "/workflows/" + esc + "/terminate", `{"reason":"ui"}`},
		{"terminate via dot segments", "POST", "/workflows/x/query/../../" + esc + "/terminate", `{}`},
		{"terminate via encoded dot segments", "POST", "/workflows/x/query/%2E%2E/%2e%2e/" + esc + "/terminate", `{}`},
		{"reset", "POST", "/workflows/" + esc + "/reset", `{"reason":"ui","workflowTaskFinishEventId":"3"}`},
		{"schedule create", "POST", "/schedules/%2Fworkflows%2Fs%2Fquery%2F", `{"scheduleId":"/workflows/s/query/",` +
			`"requestId":"r1","schedule":{"spec":{"interval":[{"interval":"60s"}]},"action":{"startWorkflow":` +
			`{"workflowId":"x","workflowType":{"name":"Issue"},"taskQueue":{"name":"q"}}}}}`},
		{"namespace update", "POST", "/update", `{"updateInfo":{"description":"owned"}}`},
	}
	for _, a := range attacks {
		if status, body := uiSend(ctx, t, hc, a.method, api+a.path, a.body, token); status != http.StatusForbidden {
			t.Errorf("%s (%s %s): %d %.200s, want 403", a.name, a.method, a.path, status, body)
		}
	}

	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("starter run --ui: %v\n%s", err, runErr.String())
		}
	case <-ctx.Done():
		t.Fatalf("the sweep did not finish:\n%s", runErr.String())
	}
	dir := filepath.Join(runs, "uiguard")
	out, _ := mainOut(t, "status", "uiguard", "--runs", runs, "--json")
	var st statusReport
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	arms := len(recordedPlan(t, dir).Arms)
	if st.Instances < 5 || arms != 2 {
		t.Fatalf("the sweep's shape: %d instances, %d arms", st.Instances, arms)
	}
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	if want := st.Instances * arms; len(rows) != want {
		t.Errorf("the sweep behind the UI wrote %d rows, want %d", len(rows), want)
	}
	for k, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("row %v has error %v", k, r[results.FieldError])
		}
	}
}

// uiSend makes a request with the path exactly as given (Go's client cleans nothing) and returns status and body.
func uiSend(ctx context.Context, t *testing.T, hc *http.Client, method, rawURL, body, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, rawURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("X-CSRF-Token", token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
