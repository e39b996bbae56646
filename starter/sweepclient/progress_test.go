package sweepclient

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vbauerster/mpb/v8"
)

// ansi matches terminal control sequences (cursor moves, line clears) that the bars write.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// TestBarsKeepLogLinesWhole draws bars into a buffer posing as a terminal and logs through the console switch
// meanwhile: the log line must come out whole on a line of its own, above the bars.
func TestBarsKeepLogLinesWhole(t *testing.T) {
	var term bytes.Buffer
	console := &consoleSwitch{base: &term, tty: true}
	d := newBarDisplay(&term, console, mpb.WithAutoRefresh(), mpb.WithWidth(100))
	eta := 30.0
	ev := ProgressEvent{IssuesDone: 1, IssuesTotal: 4, IssuesRunning: 2, Rows: 2, RowsTotal: 8, SpendUSD: 0.25,
		PaidCalls: 3, CacheHits: 1, ElapsedS: 12, ETAS: &eta}
	d.show(ev)
	const logLine = "12:00:00 INF a log line while the bars run instance=acme__x-1\n"
	if _, err := console.Write([]byte(logLine)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // a refresh or two
	ev.IssuesDone, ev.Rows = 4, 8
	d.show(ev)
	d.close()
	// After the bars, the switch writes to the terminal directly.
	if _, err := console.Write([]byte("after\n")); err != nil {
		t.Fatal(err)
	}

	var lines []string
	for _, l := range strings.Split(ansi.ReplaceAllString(term.String(), ""), "\n") {
		lines = append(lines, strings.TrimRight(l, "\r "))
	}
	text := strings.Join(lines, "\n")
	t.Logf("terminal:\n%s", text)
	found := false
	for _, l := range lines {
		if l == strings.TrimSuffix(logLine, "\n") {
			found = true
		}
	}
	if !found {
		t.Errorf("the log line is not whole on a line of its own:\n%s", text)
	}
	for _, want := range []string{"issues", "4/4", "rows", "8/8", "spend   $0.2500", "paid calls 3", "cache hits 1"} {
		if !strings.Contains(text, want) {
			t.Errorf("bars lack %q:\n%s", want, text)
		}
	}
	if !strings.HasSuffix(text, "after\n") {
		t.Errorf("a write after the bars closed did not reach the terminal:\n%s", text)
	}
}

func TestLineAndJSONDisplays(t *testing.T) {
	var buf bytes.Buffer
	d := &lineDisplay{w: &buf}
	ev := ProgressEvent{Event: "progress", IssuesDone: 1, IssuesTotal: 2, Rows: 2, RowsTotal: 4, ElapsedS: 3}
	d.show(ev)
	ev.ElapsedS = 4
	d.show(ev) // same progress: no new line
	ev.Rows = 3
	d.show(ev)
	if got := strings.Count(buf.String(), "\n"); got != 2 || !strings.Contains(buf.String(), "rows 3/4") {
		t.Errorf("lines:\n%s", buf.String())
	}

	buf.Reset()
	jl := &jsonLines{w: &buf}
	j := &jsonDisplay{w: jl}
	j.show(ev)
	_, _ = jl.Write([]byte("starter: a message for people\n{\"level\":\"info\"}\npartial"))
	jl.Flush()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 lines:\n%s", buf.String())
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("not JSON: %s", l)
		}
	}
	var msg map[string]string
	if json.Unmarshal([]byte(lines[1]), &msg) != nil || msg["message"] != "starter: a message for people" {
		t.Errorf("wrapped line %s", lines[1])
	}
}
