package sweepclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"ctxlab/activities/api/errkind"
	"ctxlab/results/runstate"
	"ctxlab/runfolder"
	"ctxlab/workflows"
)

// lineDisplay prints a line whenever the progress changes: for logs and pipes.
type lineDisplay struct {
	w    io.Writer
	last *ProgressEvent
}

func (d *lineDisplay) show(ev ProgressEvent) {
	if d.last != nil && d.last.same(ev) {
		return
	}
	d.last = &ev
	fmt.Fprintf(d.w, "[%s] %s\n", runstate.FormatDuration(runstate.Seconds(ev.ElapsedS)), ev.line())
}

func (d *lineDisplay) close() {}

// jsonDisplay writes each changed progress event as a JSON line.
type jsonDisplay struct {
	w    io.Writer
	last *ProgressEvent
}

func (d *jsonDisplay) show(ev ProgressEvent) {
	if d.last != nil && d.last.same(ev) {
		return
	}
	d.last = &ev
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	_, _ = d.w.Write(append(b, '\n'))
}

func (d *jsonDisplay) close() {}

// barDisplay draws progress bars on a terminal: issues (with ETA), rows, and a spend line. While the bars are
// shown, console log lines go through the bars' container, which prints them above the bars instead of through
// them.
type barDisplay struct {
	w       io.Writer
	console *consoleSwitch
	opts    []mpb.ContainerOption

	mu                 sync.Mutex
	ev                 ProgressEvent
	p                  *mpb.Progress
	issues, rows, cost *mpb.Bar
}

func newBarDisplay(w io.Writer, console *consoleSwitch, opts ...mpb.ContainerOption) *barDisplay {
	return &barDisplay{w: w, console: console, opts: opts}
}

func (d *barDisplay) current() ProgressEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ev
}

func (d *barDisplay) show(ev ProgressEvent) {
	d.mu.Lock()
	d.ev = ev
	d.mu.Unlock()
	if d.p == nil {
		d.start(ev)
	}
	d.issues.SetTotal(int64(ev.IssuesTotal), false)
	d.issues.SetCurrent(int64(ev.IssuesDone))
	d.rows.SetTotal(int64(ev.RowsTotal), false)
	d.rows.SetCurrent(int64(ev.Rows))
}

func (d *barDisplay) start(ev ProgressEvent) {
	opts := append([]mpb.ContainerOption{mpb.WithOutput(d.w), mpb.WithRefreshRate(150 * time.Millisecond)},
		d.opts...)
	d.p = mpb.New(opts...)
	name := func(s string) decor.Decorator { return decor.Name(s, decor.WC{W: 7, C: decor.DindentRight}) }
	counts := decor.CountersNoUnit("%d/%d", decor.WC{W: 11, C: decor.DindentRight})
	d.issues = d.p.AddBar(int64(ev.IssuesTotal), mpb.BarWidth(40),
		mpb.PrependDecorators(name("issues"), counts),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
			e := d.current()
			s := fmt.Sprintf(" running %d  failed %d", e.IssuesRunning, e.IssuesFailed)
			if e.IssuesPaused > 0 {
				s += fmt.Sprintf("  paused %d (spend cap)", e.IssuesPaused)
			}
			return s + "  eta " + etaText(e)
		})))
	d.rows = d.p.AddBar(int64(ev.RowsTotal), mpb.BarWidth(40),
		mpb.PrependDecorators(name("rows"), decor.CountersNoUnit("%d/%d", decor.WC{W: 11, C: decor.DindentRight})),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
			return fmt.Sprintf(" with errors %d", d.current().RowErrors)
		})))
	d.cost = d.p.New(0, mpb.NopStyle(), mpb.PrependDecorators(decor.Any(func(decor.Statistics) string {
		e := d.current()
		return fmt.Sprintf("spend   $%.4f  paid calls %d  cache hits %d  failed calls %d  elapsed %s", e.SpendUSD,
			e.PaidCalls, e.CacheHits, e.FailedCalls, runstate.FormatDuration(runstate.Seconds(e.ElapsedS)))
	})))
	if d.console != nil {
		d.console.route(d.p)
	}
}

func (d *barDisplay) close() {
	if d.p == nil {
		return
	}
	// Completing every bar lets the container draw them once more and stop.
	for _, b := range []*mpb.Bar{d.issues, d.rows, d.cost} {
		b.SetTotal(-1, true)
	}
	d.p.Wait()
	if d.console != nil {
		d.console.route(nil)
	}
}

// consoleSwitch is the console log writer: the terminal, or the bars' container while bars are shown.
type consoleSwitch struct {
	base io.Writer
	tty  bool

	mu   sync.Mutex
	over io.Writer
}

func (c *consoleSwitch) route(w io.Writer) {
	c.mu.Lock()
	c.over = w
	c.mu.Unlock()
}

func (c *consoleSwitch) Write(b []byte) (int, error) {
	c.mu.Lock()
	over := c.over
	c.mu.Unlock()
	if over != nil {
		if n, err := over.Write(b); err == nil {
			return n, nil
		}
		// The bars stopped between the check and the write: print directly.
	}
	return c.base.Write(b)
}

// IsTerminal tells the console logger whether to use colors: those of the terminal behind the switch.
func (c *consoleSwitch) IsTerminal() bool { return c.tty }

// jsonLines keeps a --json run's stderr all JSON: JSON lines pass as they are, any other line (an error printed
// for people) becomes {"event":"message","message":...}.
type jsonLines struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (j *jsonLines) Write(b []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf = append(j.buf, b...)
	for {
		i := bytes.IndexByte(j.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		if err := j.emit(j.buf[:i]); err != nil {
			return 0, err
		}
		j.buf = j.buf[i+1:]
	}
}

func (j *jsonLines) emit(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	if !json.Valid(line) {
		wrapped, err := json.Marshal(map[string]string{"event": "message", "message": string(line)})
		if err != nil {
			return err
		}
		line = wrapped
	}
	_, err := j.w.Write(append(append([]byte{}, line...), '\n'))
	return err
}

// Flush writes a last line that had no newline.
func (j *jsonLines) Flush() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.buf) > 0 {
		_ = j.emit(j.buf)
		j.buf = nil
	}
}

// progressDisplay picks the display for a run's options and stderr; nil when nothing is shown.
func progressDisplay(o Options, stderr io.Writer, console *consoleSwitch) display {
	switch {
	case o.Quiet:
		return quietDisplay{}
	case o.JSON:
		return &jsonDisplay{w: stderr}
	case console.tty && termWidth(stderr) > 0:
		return newBarDisplay(stderr, console)
	}
	return &lineDisplay{w: stderr}
}

// termWidth returns the width of the terminal w is, or 0 (a terminal of unknown size, as under `script`, gets plain
// lines: bars cannot be drawn on it).
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

// quietDisplay shows nothing: --quiet still samples progress, to notice the spend cap.
type quietDisplay struct{}

func (quietDisplay) show(ProgressEvent) {}
func (quietDisplay) close()             {}

// RunSummary is a --json run's stdout: one object.
type RunSummary struct {
	Run         string         `json:"run"`
	Dir         string         `json:"dir"`
	OK          bool           `json:"ok"`
	Error       string         `json:"error,omitempty"`
	Issues      int            `json:"issues"`
	Failed      []string       `json:"failed_issues"`
	Generations int            `json:"generations"`
	Rows        int            `json:"rows"`
	RowErrors   int            `json:"row_errors"`
	ErrorKinds  map[string]int `json:"error_kinds"` // rows with errors by kind (results.ErrorKind)
	// ErrorClasses counts them by whose failure it is: the endpoint's, the configuration's and the environment's (a
	// re-run retries them), the model's (final).
	ErrorClasses map[errkind.Class]int `json:"error_classes"`
	Spend        runstate.Spend        `json:"spend"`
	Results      string                `json:"results"`
	SummaryFile  string                `json:"summary_file"`
	// Summary is summary.md's table.
	Summary string `json:"summary"`
}

// writeJSONSummary prints a --json run's result: the sweep's outcome with its rows and spend from the run folder.
func writeJSONSummary(stdout io.Writer, runDir string, res workflows.SweepResult, runErr error) {
	out := RunSummary{Run: filepath.Base(runDir), Dir: runDir, OK: runErr == nil && len(res.Failed) == 0,
		Issues: res.Issues, Failed: res.Failed, Generations: res.Generations, Summary: res.Summary,
		Results: runfolder.Rows(runDir), SummaryFile: runfolder.Summary(runDir)}
	if out.Failed == nil {
		out.Failed = []string{}
	}
	out.ErrorKinds, out.ErrorClasses = map[string]int{}, map[errkind.Class]int{}
	if runErr != nil {
		out.Error = runErr.Error()
	}
	if rec, err := runstate.Read(runDir); err == nil {
		st := runstate.Compute(rec, runstate.Options{Now: time.Now()})
		out.Rows, out.Spend = len(rec.Rows), st.Spend
		tally := TallyRowErrors(rec.Rows)
		out.RowErrors, out.ErrorKinds, out.ErrorClasses = tally.Errors, tally.Kinds, tally.Classes
	}
	out.OK = out.OK && out.RowErrors == 0 // a sweep whose rows failed did not get its work done
	b, err := json.Marshal(out)
	if err != nil {
		return
	}
	fmt.Fprintln(stdout, string(b))
}
