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

	"ctxlab/activities/api"
	"ctxlab/activities/llm"
	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// IssueInput is one instance of a sweep.
type IssueInput struct {
	Run      string          `json:"run"`
	Instance api.InstanceRef `json:"instance"`
	Plan     cas.Ref         `json:"plan"`
	Dataset  specs.Dataset   `json:"dataset"`
	Grading  specs.Grading   `json:"grading"`
	Retries  int             `json:"retries"`
	Debug    specs.Debug     `json:"debug,omitempty"`
	Queues   Queues          `json:"queues"`
	// InfraWaits overrides maxInfraRounds, how often a node waits for the endpoint (-1: never; tests).
	InfraWaits int `json:"infra_waits,omitempty"`
	// Arms, when set, are the only arms (method and model) to run and record; the rest already have their final
	// rows, and nodes only they need do not run.
	Arms []results.Key `json:"arms,omitempty"`
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
	infraVersion := workflow.GetVersion(ctx, infraChange, workflow.DefaultVersion, 1)
	var plan specs.Plan
	if err := workflow.ExecuteActivity(bookkeepingOptions(ctx, q), api.LoadPlanName,
		api.LoadPlanInput{Run: in.Run, Plan: in.Plan}).Get(ctx, &plan); err != nil {
		return res, fmt.Errorf("instance %s: loading plan: %w", in.Instance.ID, err)
	}
	if len(in.Arms) > 0 {
		plan = onlyArms(plan, in.Arms)
	}

	outputs := map[string]api.NodeOutput{}
	failures := map[string]string{} // node key -> why (set for failed and skipped nodes)
	rootFailure := map[string]bool{}
	started := map[string]bool{}
	rounds := map[string]int{} // node key -> times rescheduled after losing its workers
	// Node key -> times it waited for the endpoint (a long Retry-After, or retries used up on 429s, 5xx, timeouts),
	// and the kind of a node's failure, which its rows record.
	infraRounds, failureKinds := map[string]int{}, map[string]string{}
	maxInfra := maxInfraRounds
	if in.InfraWaits != 0 {
		maxInfra = max(in.InfraWaits, 0)
	}
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
			nin := api.NodeInput{
				Run: in.Run, Instance: in.Instance, Node: node.Key, Step: node.Steps[0], Params: node.Params,
				Inputs: map[string]api.NodeOutput{}, Dataset: in.Dataset, Debug: in.Debug,
			}
			// Copied into a map: the order is never observed.
			//workflowcheck:ignore
			for name, k := range node.Inputs {
				nin.Inputs[name] = outputs[k]
			}
			actx := activityOptions(ctx, q, specs.Catalog[node.Activity].Queue, in.Retries, in.Grading.Budget())
			modelNode := specs.Catalog[node.Activity].Queue == specs.QueueLLM
			var run func()
			run = func() {
				sel.AddFuture(workflow.ExecuteActivity(actx, node.Activity, nin), func(f workflow.Future) {
					var out api.NodeOutput
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
					if err != nil && infraVersion >= 1 && infraRounds[node.Key] < maxInfra {
						// The endpoint's failure, not the model's: wait (as long as it asked, on a durable timer
						// that a resume signal cuts short) and run the node again.
						if d, ok := infraWait(err, infraRounds[node.Key], modelNode); ok {
							workflow.GetLogger(ctx).Warn("waiting for the endpoint", "node", node.Key, "wait", d,
								"error", describe(err))
							infraRounds[node.Key]++
							tctx, wake := workflow.WithCancel(ctx)
							wakes[node.Key] = wake
							sel.AddFuture(workflow.NewTimer(tctx, d), func(workflow.Future) {
								delete(wakes, node.Key)
								run()
							})
							return
						}
					}
					if err != nil {
						failures[node.Key] = describe(err)
						failureKinds[node.Key] = failureKind(err, modelNode)
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
				if k := failureKinds[s.Key]; infraVersion >= 1 && k != "" {
					row[ErrorKindField] = k
				}
			}
		}
		rows = append(rows, row)
	}
	var n int
	if err := workflow.ExecuteActivity(bookkeepingOptions(ctx, q), api.RecordName,
		api.RecordInput{Run: in.Run, Rows: rows}).Get(ctx, &n); err != nil {
		return res, fmt.Errorf("instance %s: recording rows: %w", in.Instance.ID, err)
	}
	res.Rows = len(rows)
	return res, nil
}

// onlyArms is the part of a plan that the given arms need: those arms, and their nodes with every node those read.
func onlyArms(plan specs.Plan, keep []results.Key) specs.Plan {
	byKey := map[string]specs.Node{}
	for _, n := range plan.Nodes {
		byKey[n.Key] = n
	}
	needed := map[string]bool{}
	var need func(k string)
	need = func(k string) {
		if needed[k] {
			return
		}
		needed[k] = true
		// Marks a set: the order is never observed.
		//workflowcheck:ignore
		for _, in := range byKey[k].Inputs {
			need(in)
		}
	}
	var out specs.Plan
	for _, arm := range plan.Arms {
		if slices.Contains(keep, results.Key{Method: arm.Method, Model: arm.Model}) {
			out.Arms = append(out.Arms, arm)
			for _, s := range arm.Steps {
				need(s.Key)
			}
		}
	}
	for _, n := range plan.Nodes {
		if needed[n.Key] {
			out.Nodes = append(out.Nodes, n)
		}
	}
	return out
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
	return errors.As(err, &app) && app.Type() == api.ErrWorkerStopped
}

// Change ids of workflow.GetVersion: what an Issue workflow does differently from the histories saved before.
const (
	// resumeChange: a resume signal clears the issue's set of nodes waiting at the spend cap.
	resumeChange = "resume-clears-paused"
	// infraChange: a node that failed because of the endpoint waits and runs again, and rows record error_kind.
	infraChange = "infra-waits"
)

// ErrorKindField is the row field that names the kind of a failed row's error (an llm.Kind such as rate_limit,
// auth or context_length, "lost_worker" or "step_timeout"; see failureKind); llm.ClassOf says whose failure it is.
// Absent when the failure has no known kind (a step's own error).
const ErrorKindField = "error_kind"

// maxInfraRounds bounds how often a node waits for the endpoint before its rows record the failure (a re-run of
// the finished sweep retries them): with backoff from a minute to 30, about 2 hours of server errors; with an
// endpoint asking for an hour each time, 8 hours.
const maxInfraRounds = 8

// maxProviderWait bounds one wait an endpoint asks for.
const maxProviderWait = 6 * time.Hour

// infraWait reports whether a node's failure is the infrastructure's, and how long to wait before running it again:
// what the endpoint asked for (ErrProviderWait), else a backoff of a minute doubling to 30 minutes by round.
// modelNode says the node calls a model (see failureKind).
func infraWait(err error, round int, modelNode bool) (time.Duration, bool) {
	backoff := time.Minute
	for range min(round, 5) {
		backoff *= 2
	}
	backoff = min(backoff, 30*time.Minute)
	if app := providerWait(err); app != nil {
		var w api.ProviderWait
		if app.Details(&w) == nil && w.Wait > 0 {
			return min(max(w.Wait, time.Second), maxProviderWait), true
		}
		return backoff, true
	}
	if llm.ClassOf(failureKind(err, modelNode)) == llm.ClassInfrastructure {
		return backoff, true
	}
	return 0, false
}

// providerWait returns the ErrProviderWait error in err's chain, nil when there is none.
func providerWait(err error) *temporal.ApplicationError {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if app, ok := e.(*temporal.ApplicationError); ok && app.Type() == api.ErrProviderWait {
			return app
		}
	}
	return nil
}

// failureKind names the kind of a node's failure: the model call's kind (the type of an application error in the
// chain; the activity wraps it with the step), "lost_worker", "timeout" for a model-calling node that ran out of
// time (the endpoint did not answer), "step_timeout" for another node (tests that hang under a patch, a step too
// slow for its budget: not the endpoint's), or "" when it has none.
func failureKind(err error, modelNode bool) string {
	if app := providerWait(err); app != nil {
		var w api.ProviderWait
		if app.Details(&w) == nil && w.Kind != "" {
			return w.Kind
		}
		return string(llm.KindRateLimit)
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if app, ok := e.(*temporal.ApplicationError); ok && llm.Known(app.Type()) {
			return app.Type()
		}
	}
	if lostWorker(err) {
		return string(llm.KindLostWorker)
	}
	var to *temporal.TimeoutError
	if errors.As(err, &to) {
		if modelNode {
			return string(llm.KindTimeout)
		}
		return "step_timeout"
	}
	return ""
}

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
	return errors.As(err, &app) && app.Type() == api.ErrSpendLimit
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

// describe turns an activity failure into the message recorded on rows: the activity's application error's
// message, or what timed out. Only the message: it already holds the text of the errors it wraps, which Error
// would append once more per level (with Temporal's type annotations).
func describe(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	var to *temporal.TimeoutError
	if errors.As(err, &to) {
		return "timed out (" + to.TimeoutType().String() + ")"
	}
	return err.Error()
}
