package workflows

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities"
	"ctxlab/activities/cas"
	"ctxlab/results"
	"ctxlab/specs"
)

// IssueInput is one instance of a sweep.
type IssueInput struct {
	Run      string                 `json:"run"`
	Instance activities.InstanceRef `json:"instance"`
	Plan     cas.Ref                `json:"plan"`
	Dataset  specs.Dataset          `json:"dataset"`
	Grading  specs.Grading          `json:"grading"`
	Retries  int                    `json:"retries"`
	Debug    specs.Debug            `json:"debug,omitempty"`
	Queues   Queues                 `json:"queues"`
}

// IssueResult says how one instance went.
type IssueResult struct {
	Instance string `json:"instance"`
	Rows     int    `json:"rows"`
	// FailedSteps counts nodes that failed (their rows carry the error).
	FailedSteps int `json:"failed_steps"`
}

// Issue runs every node of the plan for one instance: a node starts as soon as all its inputs are done, independent
// nodes run in parallel, and a node shared by several methods runs once. A failed node fails only the rows of the
// methods that need it; the rest go on. Rows are recorded at the end.
func Issue(ctx workflow.Context, in IssueInput) (IssueResult, error) {
	q := in.Queues.withDefaults()
	res := IssueResult{Instance: in.Instance.ID}
	// Taken first, so a workflow started by older code keeps its behavior on replay.
	resumeVersion := workflow.GetVersion(ctx, resumeChange, workflow.DefaultVersion, 1)
	var plan specs.Plan
	if err := workflow.ExecuteActivity(bookkeepingOptions(ctx, q), activities.LoadPlanName,
		activities.LoadPlanInput{Run: in.Run, Plan: in.Plan}).Get(ctx, &plan); err != nil {
		return res, fmt.Errorf("instance %s: loading plan: %w", in.Instance.ID, err)
	}

	outputs := map[string]activities.NodeOutput{}
	failures := map[string]string{} // node key -> why (set for failed and skipped nodes)
	rootFailure := map[string]bool{}
	started := map[string]bool{}
	rounds := map[string]int{} // node key -> times rescheduled after losing its workers
	// Nodes waiting for the spend cap to be raised, and how often each has waited: such a node is neither failed
	// nor done, so the issue stays open and the sweep resumes where it stopped.
	waiting, waits := map[string]bool{}, map[string]int{}
	wakes := map[string]workflow.CancelFunc{} // cancels a waiting node's timer: it checks the cap at once
	notify := func() {
		if parent := workflow.GetInfo(ctx).ParentWorkflowExecution; parent != nil {
			workflow.SignalExternalWorkflow(ctx, parent.ID, "", PausedSignal,
				IssuePaused{Instance: in.Instance.ID, Nodes: len(waiting)})
		}
	}
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, ResumeSignal), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		// Sorted keys: a deterministic order.
		//workflowcheck:ignore
		for _, k := range slices.Sorted(maps.Keys(wakes)) {
			wakes[k]()
		}
		// The sweep forgot this issue's pause when it forwarded the resume: every waiting node now checks the cap
		// again, and one still over it says so again. Kept, the old set made the first node to pass report the
		// others as paused, and a starter that had just raised the cap stopped at once.
		if resumeVersion >= 1 && len(waiting) > 0 {
			clear(waiting)
			notify()
		}
	})
	remaining := len(plan.Nodes)
	for remaining > 0 {
		for _, n := range plan.Nodes {
			if started[n.Key] {
				continue
			}
			ready, blockedBy := true, ""
			// Sorted keys: a deterministic order.
			//workflowcheck:ignore
			for _, name := range slices.Sorted(maps.Keys(n.Inputs)) {
				k := n.Inputs[name]
				if _, bad := failures[k]; bad {
					blockedBy = name
					break
				}
				if _, ok := outputs[k]; !ok {
					ready = false
				}
			}
			if blockedBy != "" {
				started[n.Key] = true
				failures[n.Key] = "skipped: input " + blockedBy + " failed"
				remaining--
				continue
			}
			if !ready {
				continue
			}
			started[n.Key] = true
			node := n
			nin := activities.NodeInput{
				Run: in.Run, Instance: in.Instance, Node: node.Key, Step: node.Steps[0], Params: node.Params,
				Inputs: map[string]activities.NodeOutput{}, Dataset: in.Dataset, Debug: in.Debug,
			}
			// Copied into a map: the order is never observed.
			//workflowcheck:ignore
			for name, k := range node.Inputs {
				nin.Inputs[name] = outputs[k]
			}
			actx := activityOptions(ctx, q, specs.Catalog[node.Activity].Queue, in.Retries, in.Grading.Budget())
			var run func()
			run = func() {
				sel.AddFuture(workflow.ExecuteActivity(actx, node.Activity, nin), func(f workflow.Future) {
					var out activities.NodeOutput
					err := f.Get(ctx, &out)
					if err != nil && spendLimited(err) {
						if !waiting[node.Key] {
							waiting[node.Key] = true
							notify()
						}
						d := spendWait(waits[node.Key])
						waits[node.Key]++
						tctx, wake := workflow.WithCancel(ctx)
						wakes[node.Key] = wake
						sel.AddFuture(workflow.NewTimer(tctx, d), func(workflow.Future) {
							delete(wakes, node.Key)
							run()
						})
						return
					}
					if waiting[node.Key] {
						delete(waiting, node.Key)
						notify()
					}
					if err != nil && lostWorker(err) && rounds[node.Key] < maxRounds {
						// Every attempt ended with its worker gone: that says nothing about the node, so it
						// gets a fresh set of attempts instead of failing the rows that need it.
						rounds[node.Key]++
						run()
						return
					}
					if err != nil {
						failures[node.Key] = describe(err)
						rootFailure[node.Key] = true
						res.FailedSteps++
					} else {
						outputs[node.Key] = out
					}
					remaining--
				})
			}
			run()
		}
		if remaining > 0 {
			sel.Select(ctx)
		}
	}

	rows := make([]results.Row, 0, len(plan.Arms))
	for _, arm := range plan.Arms {
		row := results.Row{results.FieldInstance: in.Instance.ID, results.FieldMethod: arm.Method,
			results.FieldModel: arm.Model}
		for _, f := range results.Required {
			if _, set := row[f]; !set {
				row[f] = nil // every row names every required field, null until a step sets it
			}
		}
		merged := map[string]bool{}
		for _, s := range arm.Steps {
			// A borrowed step (its id namespaced, e.g. "anchor.context" in a baseline fitted to an anchor's
			// budget) is another method's node: it must run first, and its failure fails this row, but its
			// fields (model calls, cost, localization) describe that method's row, not this one.
			if !merged[s.Key] && !borrowed(s.ID) {
				merged[s.Key] = true
				mergeRow(row, outputs[s.Key].Row)
			}
			if rootFailure[s.Key] && row[results.FieldError] == nil {
				row[results.FieldError] = fmt.Sprintf("step %s: %s", s.ID, failures[s.Key])
			}
		}
		rows = append(rows, row)
	}
	var n int
	if err := workflow.ExecuteActivity(bookkeepingOptions(ctx, q), activities.RecordName,
		activities.RecordInput{Run: in.Run, Rows: rows}).Get(ctx, &n); err != nil {
		return res, fmt.Errorf("instance %s: recording rows: %w", in.Instance.ID, err)
	}
	res.Rows = len(rows)
	return res, nil
}

// borrowed reports whether a step id names a step taken from another method (a namespace prefix "name.").
func borrowed(id string) bool { return strings.Contains(id, ".") }

// mergeRow adds a node's row fragment to a row: fields in results.Summed (model calls, tokens, cost) add up over
// the arm's nodes, each node counted once; every other field takes the value of the last node that sets it.
func mergeRow(row results.Row, fragment map[string]any) {
	// Sorted keys: a deterministic order.
	//workflowcheck:ignore
	for _, k := range slices.Sorted(maps.Keys(fragment)) {
		v := fragment[k]
		if slices.Contains(results.Summed, k) {
			if sum, ok := addNumbers(row[k], v); ok {
				row[k] = sum
				continue
			}
		}
		row[k] = v
	}
}

// addNumbers returns a+b when both are numbers (or a is unset); JSON numbers arrive as float64.
func addNumbers(a, b any) (float64, bool) {
	num := func(v any) (float64, bool) {
		switch x := v.(type) {
		case float64:
			return x, true
		case int:
			return float64(x), true
		case int64:
			return float64(x), true
		}
		return 0, false
	}
	y, ok := num(b)
	if !ok {
		return 0, false
	}
	if a == nil {
		return y, true
	}
	x, ok := num(a)
	if !ok {
		return 0, false
	}
	return x + y, true
}

// maxRounds bounds how often a node is rescheduled after all its attempts lost their workers.
const maxRounds = 10

// lostWorker reports whether an activity failed because its worker went away (it stopped heartbeating, or it
// was shut down mid-run) rather than because of anything the node did.
func lostWorker(err error) bool {
	var to *temporal.TimeoutError
	if errors.As(err, &to) && to.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT {
		return true
	}
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == activities.ErrWorkerStopped
}

// Change ids of workflow.GetVersion: what an Issue workflow does differently from the histories saved before.
const (
	// resumeChange: a resume signal clears the issue's set of nodes waiting at the spend cap.
	resumeChange = "resume-clears-paused"
)

// PausedSignal is what an Issue workflow sends its sweep when the number of its nodes waiting for the spend cap
// changes.
const PausedSignal = "issue-paused"

// ResumeSignal asks a sweep, and through it each paused issue, to check the spend cap now instead of at the end of
// its wait: a starter sends it when it attaches, since the cap may have been raised.
const ResumeSignal = "resume"

// IssuePaused is the PausedSignal's payload.
type IssuePaused struct {
	Instance string `json:"instance"`
	// Nodes is how many of the issue's nodes wait for the spend cap (0: none any more).
	Nodes int `json:"nodes"`
}

// spendLimited reports whether an activity stopped at the run's spend cap.
func spendLimited(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == activities.ErrSpendLimit
}

// spendWait is how long a node waits before checking the spend cap again: 10 s, doubling to at most 5 minutes, so
// a sweep paused for a day adds a few hundred events to its history, not thousands. A starter that stops the
// embedded server while paused loses nothing: timers that expired while it was down fire as soon as it restarts.
func spendWait(n int) time.Duration {
	d := 10 * time.Second
	for range min(n, 5) {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// describe turns an activity failure into the message recorded on rows: the innermost application error's
// message, or what timed out.
func describe(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Error()
	}
	var to *temporal.TimeoutError
	if errors.As(err, &to) {
		return "timed out (" + to.TimeoutType().String() + ")"
	}
	return err.Error()
}
