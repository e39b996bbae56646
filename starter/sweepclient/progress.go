package sweepclient

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

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
