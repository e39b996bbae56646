package sweepclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"go.temporal.io/sdk/client"
	"golang.org/x/term"

	"ctxlab/activities/api/errkind"
	"ctxlab/results"
	"ctxlab/results/runstate"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/workflows"
)

// progressMode is how starter run reports a sweep's progress.
type progressMode int

const (
	progressAuto  progressMode = iota // bars on a terminal, a plain line per change otherwise
	progressQuiet                     // nothing: only the summary
	progressJSON                      // progress events as JSON lines (on stderr)
)

// ProgressEvent is one report of a sweep's progress; in --json mode each is one line on stderr.
type ProgressEvent struct {
	Time  time.Time `json:"time"`
	Event string    `json:"event"` // always "progress"
	// IssuesDone counts finished issues, IssuesFailed those of them that failed without rows.
	IssuesDone    int `json:"issues_done"`
	IssuesTotal   int `json:"issues_total"`
	IssuesRunning int `json:"issues_running"`
	IssuesFailed  int `json:"issues_failed"`
	// IssuesPaused counts issues waiting on the spend cap.
	IssuesPaused int     `json:"issues_paused,omitempty"`
	Rows         int     `json:"rows"`
	RowErrors    int     `json:"row_errors"`
	RowsTotal    int     `json:"rows_total"`
	SpendUSD     float64 `json:"spend_usd"`
	// PaidCalls counts answered calls only; FailedCalls those that got no answer (429, 5xx, lost connections).
	PaidCalls   int     `json:"paid_calls"`
	CacheHits   int     `json:"cache_hits"`
	FailedCalls int     `json:"failed_calls,omitempty"`
	ElapsedS    float64 `json:"elapsed_s"`
	// ETAS is this session's time per finished issue times the issues left; absent until an issue finishes.
	ETAS *float64 `json:"eta_s,omitempty"`
}

// same reports whether two events show the same progress (times aside).
func (e ProgressEvent) same(o ProgressEvent) bool {
	e.Time, e.ElapsedS, e.ETAS = time.Time{}, 0, nil
	o.Time, o.ElapsedS, o.ETAS = time.Time{}, 0, nil
	return e == o
}

// sampler gathers progress: issue counts from the sweep's query, the spend from the run's budget workflow, rows and
// call counts from the run folder's files, read incrementally so a long sweep's files are not re-read every second.
type sampler struct {
	client client.Client
	id     string
	// run names the budget to read the spend from; "" when the run pays for no call (its models are offline).
	run   string
	arms  int
	start time.Time
	// startDone is the finished-issue count of the first sample: the ETA rate counts this session's issues only.
	startDone int
	rows      runlog.Tail[results.Row]
	calls     runlog.Tail[runlog.Call]
	rowErr    map[results.Key]bool
	spend     runstate.Spend
	haveFirst bool
	// collector writes the rows the sweep's issues stored into results.jsonl before each sample (nil: none).
	collector *rowCollector
}

func newSampler(c client.Client, id, run, runDir string, arms int, collector *rowCollector) *sampler {
	return &sampler{client: c, id: id, run: run, arms: arms, start: time.Now(), rowErr: map[results.Key]bool{},
		collector: collector,
		rows:      runlog.Tail[results.Row]{Path: runfolder.Rows(runDir)},
		calls:     runlog.Tail[runlog.Call]{Path: runfolder.Calls(runDir)}}
}

// sample returns the current progress; ok is false while the sweep has not loaded its dataset or does not answer.
func (s *sampler) sample(ctx context.Context) (ev ProgressEvent, ok bool) {
	if s.collector != nil {
		s.collector.poll(ctx)
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	v, err := s.client.QueryWorkflow(qctx, s.id, "", workflows.ProgressQuery)
	cancel()
	if err != nil {
		return ev, false
	}
	var p workflows.Progress
	if v.Get(&p) != nil || p.Total == 0 {
		return ev, false
	}
	if rows, err := s.rows.Next(); err == nil {
		for _, r := range rows {
			if r.String(results.FieldInstance) != "" {
				s.rowErr[r.Key()] = r[results.FieldError] != nil
			}
		}
	}
	if calls, err := s.calls.Next(); err == nil {
		for _, c := range calls {
			s.spend.Add(c)
		}
	}
	spent := s.spend.USD
	if s.run != "" {
		if b, err := ReadBudget(ctx, s.client, s.run); err == nil { // the workers' spend, wherever they run
			spent = b.SpentUSD
		}
	}
	if !s.haveFirst {
		s.haveFirst, s.startDone = true, p.Done
	}
	now := time.Now()
	ev = ProgressEvent{Time: now.UTC(), Event: "progress", IssuesDone: p.Done, IssuesTotal: p.Total,
		IssuesRunning: p.Running, IssuesFailed: len(p.Failed), IssuesPaused: p.Paused, Rows: len(s.rowErr),
		RowsTotal: p.Total * s.arms, SpendUSD: spent, PaidCalls: s.spend.PaidCalls,
		CacheHits: s.spend.CacheHits, FailedCalls: s.spend.FailedCalls, ElapsedS: now.Sub(s.start).Seconds()}
	for _, bad := range s.rowErr {
		if bad {
			ev.RowErrors++
		}
	}
	if n := p.Done - s.startDone; n > 0 {
		eta := ev.ElapsedS / float64(n) * float64(p.Total-p.Done)
		ev.ETAS = &eta
	}
	return ev, true
}

// display shows progress events.
type display interface {
	show(ev ProgressEvent)
	close()
}

// watch reports the sweep's progress until done closes, then closes the display; the returned channel closes
// when it has. Every sample also goes to guard, which stops the sweep's wait at the spend cap.
func watch(ctx context.Context, s *sampler, d display, guard *pauseGuard, done <-chan struct{}) <-chan struct{} {
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer d.close()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				// One last sample, so the display ends on the final counts.
				if ev, ok := s.sample(ctx); ok {
					d.show(ev)
				}
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if ev, ok := s.sample(ctx); ok {
				d.show(ev)
				guard.observe(ev)
			}
		}
	}()
	return stopped
}

func etaText(ev ProgressEvent) string {
	switch {
	case ev.IssuesDone == ev.IssuesTotal:
		return "done"
	case ev.ETAS == nil:
		return "-"
	}
	return runstate.FormatDuration(runstate.Seconds(*ev.ETAS))
}

func (ev ProgressEvent) line() string {
	s := fmt.Sprintf("issues %d/%d done, %d running, %d failed", ev.IssuesDone, ev.IssuesTotal, ev.IssuesRunning,
		ev.IssuesFailed)
	if ev.IssuesPaused > 0 {
		s += fmt.Sprintf(", %d paused on the spend cap", ev.IssuesPaused)
	}
	s += fmt.Sprintf("; rows %d/%d (%d with errors); spend $%.4f (%d paid calls, %d cache hits", ev.Rows,
		ev.RowsTotal, ev.RowErrors, ev.SpendUSD, ev.PaidCalls, ev.CacheHits)
	if ev.FailedCalls > 0 {
		s += fmt.Sprintf(", %d failed calls", ev.FailedCalls)
	}
	return s + "); eta " + etaText(ev)
}

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
