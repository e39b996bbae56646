package workflows

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
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
	// RemoteOnly sends every node to its kind's task queue, none runs in the workflow worker (see localChange): for
	// a cluster whose workflow workers cannot reach the run folder, and to measure against the way before.
	RemoteOnly bool `json:"remote_only,omitempty"`
	// Shipped names the starter's folders the run reads, in the store (api.ShippedFolders).
	Shipped cas.Ref `json:"shipped,omitempty"`
}

// IssueResult says how one instance went.
type IssueResult struct {
	Instance string `json:"instance"`
	Rows     int    `json:"rows"`
	// FailedSteps counts nodes that failed (their rows carry the error).
	FailedSteps int `json:"failed_steps"`
	// RowsRef is where the rows are in the run's content store (rowsChange); empty when the run folder's Record
	// activity wrote them.
	RowsRef cas.Ref `json:"rows_ref,omitempty"`
}

// Issue runs every node of the plan for one instance: a node starts as soon as all its inputs are done, independent
// nodes run in parallel, and a node shared by several methods runs once. A failed node fails only the rows of the
// methods that need it; the rest go on. Rows are recorded at the end.
//
// The work is done by an issueState's methods. They must issue the same commands in the same order as the code that
// wrote the saved histories (testdata/histories): a change to that order goes behind workflow.GetVersion.
func Issue(ctx workflow.Context, in IssueInput) (IssueResult, error) {
	s := &issueState{ctx: ctx, in: in, queues: in.Queues.withDefaults(), res: IssueResult{Instance: in.Instance.ID}}
	// Taken first, so a workflow started by older code keeps its behavior on replay.
	s.resumeVersion = workflow.GetVersion(ctx, resumeChange, workflow.DefaultVersion, 1)
	s.infraVersion = workflow.GetVersion(ctx, infraChange, workflow.DefaultVersion, 1)
	s.localVersion = workflow.GetVersion(ctx, localChange, workflow.DefaultVersion, 1)
	s.agentVersion = workflow.GetVersion(ctx, agentChange, workflow.DefaultVersion, 1)
	s.usageVersion = workflow.GetVersion(ctx, failedUsageChange, workflow.DefaultVersion, 1)
	s.rowsVersion = workflow.GetVersion(ctx, rowsChange, workflow.DefaultVersion, 1)
	if err := s.loadPlan(); err != nil {
		return s.res, err
	}
	s.prepare()
	s.runNodes()
	rows := s.buildRows()
	if err := s.record(rows); err != nil {
		return s.res, err
	}
	s.res.Rows = len(rows)
	return s.res, nil
}

// issueState is one Issue workflow's progress through its plan. Its maps are keyed by node key.
type issueState struct {
	ctx    workflow.Context
	in     IssueInput
	queues Queues
	plan   specs.Plan
	res    IssueResult

	// Versions of the changes made since the first saved histories (see resumeChange, infraChange, localChange,
	// agentChange, failedUsageChange, rowsChange).
	resumeVersion, infraVersion, localVersion, agentVersion, usageVersion, rowsVersion workflow.Version

	outputs     map[string]api.NodeOutput
	failures    map[string]string // why a node failed or was skipped
	rootFailure map[string]bool   // nodes that failed themselves, not skipped for a failed input
	started     map[string]bool   // nodes scheduled or skipped
	remaining   int               // nodes neither done, failed nor skipped

	rounds map[string]int // times a node was rescheduled after losing its workers
	// Times a node waited for the endpoint (a long Retry-After, or retries used up on 429s, 5xx, timeouts), and the
	// kind of a node's failure, which its rows record.
	infraRounds  map[string]int
	failureKinds map[string]string
	maxInfra     int // bound on infraRounds

	// Nodes waiting for the spend cap to be raised, and how often each has waited: such a node is neither failed
	// nor done, so the issue stays open and the sweep resumes where it stopped.
	waiting map[string]bool
	waits   map[string]int
	wakes   map[string]workflow.CancelFunc // cancels a waiting node's timer: it checks the cap at once
	// waitsFor says what each waiting node waits for and until when (the WaitsQuery's answer).
	waitsFor map[string]NodeWait

	// What a node's failed runs spent on model calls without an answer (api.CallUsage.Spent, summed), and the
	// answers the run that failed it had used (Answered), as row fields: its rows count them (failedUsageChange).
	spent, answered map[string]map[string]float64

	sel workflow.Selector
}

// WaitsQuery is the query name that returns what an Issue's waiting nodes wait for ([]NodeWait): a starter that
// attaches prints it, then signals ResumeSignal so they try again at once.
const WaitsQuery = "waits"

// NodeWait is one node waiting on a durable timer: for the endpoint (a long Retry-After, or retries used up on
// rate limits, server errors, timeouts) or for the spend cap.
type NodeWait struct {
	Node  string    `json:"node"`
	Kind  string    `json:"kind"` // the failure's kind, or "spend_cap"
	Until time.Time `json:"until"`
	Error string    `json:"error,omitempty"`
}

// nodeRun is what running one node again needs: the activity, its options and its input.
type nodeRun struct {
	key       string
	activity  string
	actx      workflow.Context
	input     api.NodeInput
	modelNode bool // the node calls a model (see failureKind)
	local     bool // run in the workflow worker as a local activity (actx has local activity options)
	agent     bool // run as the Agent child workflow (actx has child workflow options; see agentChange)
}

// runsLocal reports whether this issue runs its cheap nodes (and its plan's loading) in the workflow worker.
func (s *issueState) runsLocal() bool { return s.localVersion >= 1 && !s.in.RemoteOnly }

// loadPlan reads the plan, cut down to in.Arms when set.
func (s *issueState) loadPlan() error {
	input := api.LoadPlanInput{Run: s.in.Run, Plan: s.in.Plan}
	f := func() workflow.Future {
		if s.runsLocal() {
			return workflow.ExecuteLocalActivity(localBookkeepingOptions(s.ctx), api.LoadPlanName, input)
		}
		return workflow.ExecuteActivity(bookkeepingOptions(s.ctx, s.queues), api.LoadPlanName, input)
	}()
	if err := f.Get(s.ctx, &s.plan); err != nil {
		return fmt.Errorf("instance %s: loading plan: %w", s.in.Instance.ID, err)
	}
	if len(s.in.Arms) > 0 {
		s.plan = onlyArms(s.plan, s.in.Arms)
	}
	return nil
}

// prepare sets up the bookkeeping and the selector, which listens for the resume signal.
func (s *issueState) prepare() {
	s.outputs = map[string]api.NodeOutput{}
	s.failures = map[string]string{}
	s.rootFailure = map[string]bool{}
	s.started = map[string]bool{}
	s.rounds = map[string]int{}
	s.infraRounds, s.failureKinds = map[string]int{}, map[string]string{}
	s.maxInfra = maxInfraRounds
	if s.in.InfraWaits != 0 {
		s.maxInfra = max(s.in.InfraWaits, 0)
	}
	s.waiting, s.waits = map[string]bool{}, map[string]int{}
	s.wakes = map[string]workflow.CancelFunc{}
	s.waitsFor = map[string]NodeWait{}
	s.spent, s.answered = map[string]map[string]float64{}, map[string]map[string]float64{}
	// A query handler issues no command: histories replay the same with it.
	_ = workflow.SetQueryHandler(s.ctx, WaitsQuery, func() ([]NodeWait, error) {
		out := make([]NodeWait, 0, len(s.waitsFor))
		// Sorted keys: a deterministic order.
		//workflowcheck:ignore
		for _, k := range slices.Sorted(maps.Keys(s.waitsFor)) {
			out = append(out, s.waitsFor[k])
		}
		return out, nil
	})
	s.sel = workflow.NewSelector(s.ctx)
	s.sel.AddReceive(workflow.GetSignalChannel(s.ctx, ResumeSignal), s.onResume)
	s.remaining = len(s.plan.Nodes)
}

// notifyParent tells the sweep how many of this issue's nodes wait for the spend cap.
func (s *issueState) notifyParent() {
	if parent := workflow.GetInfo(s.ctx).ParentWorkflowExecution; parent != nil {
		workflow.SignalExternalWorkflow(s.ctx, parent.ID, "", PausedSignal,
			IssuePaused{Instance: s.in.Instance.ID, Nodes: len(s.waiting)})
	}
}

// onResume wakes every waiting node: it checks the cap (or the endpoint) at once.
func (s *issueState) onResume(c workflow.ReceiveChannel, _ bool) {
	c.Receive(s.ctx, nil)
	// Sorted keys: a deterministic order.
	//workflowcheck:ignore
	for _, k := range slices.Sorted(maps.Keys(s.wakes)) {
		s.wakes[k]()
	}
	// The sweep forgot this issue's pause when it forwarded the resume: every waiting node now checks the cap
	// again, and one still over it says so again. Kept, the old set made the first node to pass report the
	// others as paused, and a starter that had just raised the cap stopped at once.
	if s.resumeVersion >= 1 && len(s.waiting) > 0 {
		clear(s.waiting)
		s.notifyParent()
	}
}

// runNodes schedules nodes as their inputs become ready until every node is done, failed or skipped.
func (s *issueState) runNodes() {
	for s.remaining > 0 {
		s.scheduleReady()
		if s.remaining > 0 {
			s.sel.Select(s.ctx)
		}
	}
}

// scheduleReady starts every node whose inputs are all done and skips every node with a failed input, in plan
// order (a node skipped here blocks the nodes after it in the same pass).
func (s *issueState) scheduleReady() {
	for _, n := range s.plan.Nodes {
		if s.started[n.Key] {
			continue
		}
		ready, blockedBy := s.readiness(n)
		if blockedBy != "" {
			s.started[n.Key] = true
			s.failures[n.Key] = "skipped: input " + blockedBy + " failed"
			s.remaining--
			continue
		}
		if !ready {
			continue
		}
		s.started[n.Key] = true
		s.execute(s.newRun(n))
	}
}

// readiness reports whether all of a node's inputs are done, or else names its first failed input (inputs by name).
func (s *issueState) readiness(n specs.Node) (ready bool, blockedBy string) {
	ready = true
	// Sorted keys: a deterministic order.
	//workflowcheck:ignore
	for _, name := range slices.Sorted(maps.Keys(n.Inputs)) {
		k := n.Inputs[name]
		if _, bad := s.failures[k]; bad {
			return ready, name
		}
		if _, ok := s.outputs[k]; !ok {
			ready = false
		}
	}
	return ready, ""
}

// newRun builds a ready node's activity input from its inputs' outputs.
func (s *issueState) newRun(n specs.Node) nodeRun {
	nin := api.NodeInput{
		Run: s.in.Run, Instance: s.in.Instance, Node: n.Key, Step: n.Steps[0], Params: n.Params,
		Inputs: map[string]api.NodeOutput{}, Dataset: s.in.Dataset, Debug: s.in.Debug, Shipped: s.in.Shipped,
	}
	// Copied into a map: the order is never observed.
	//workflowcheck:ignore
	for name, k := range n.Inputs {
		nin.Inputs[name] = s.outputs[k]
	}
	queue := specs.Catalog[n.Activity].Queue
	r := nodeRun{
		key:       n.Key,
		activity:  n.Activity,
		input:     nin,
		modelNode: queue == specs.QueueLLM,
		agent:     s.agentVersion >= 1 && n.Activity == specs.Agent.Name,
	}
	r.local = !r.agent && s.runsLocal() && specs.RunsLocally(n)
	switch {
	case r.agent:
		r.actx = workflow.WithChildOptions(s.ctx, workflow.ChildWorkflowOptions{
			WorkflowID: AgentWorkflowID(workflow.GetInfo(s.ctx).WorkflowExecution.ID, n.Key),
			TaskQueue:  s.queues.Workflow,
			// A node run again (after a spend-cap wait, lost workers, an endpoint wait, or in a rerun of a failed
			// issue) starts the same ID again once the run before has closed.
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		})
	case r.local:
		r.actx = localActivityOptions(s.ctx, s.in.Retries)
	default:
		r.actx = activityOptions(s.ctx, s.queues, queue, s.in.Retries, s.in.Grading.Budget())
	}
	return r
}

// execute starts (or starts again) a node's activity, or for an agent node its Agent child workflow; onDone
// handles how it ends. A local one runs in this worker: the node memoizes its output before returning, so a worker
// killed before the result reaches the history costs a memo read on replay, not the work.
func (s *issueState) execute(r nodeRun) {
	var f workflow.Future
	switch {
	case r.agent:
		f = workflow.ExecuteChildWorkflow(r.actx, AgentName,
			AgentInput{Node: r.input, Queues: s.queues, Retries: s.in.Retries})
	case r.local:
		f = workflow.ExecuteLocalActivity(r.actx, r.activity, r.input)
	default:
		f = workflow.ExecuteActivity(r.actx, r.activity, r.input)
	}
	s.sel.AddFuture(f, func(f workflow.Future) {
		s.onDone(r, f)
	})
}

// onDone handles a node's activity (or Agent child workflow) ending: it waits at the spend cap, runs again after losing its workers or
// waits for the endpoint, or else the node is done or failed.
func (s *issueState) onDone(r nodeRun, f workflow.Future) {
	var out api.NodeOutput
	err := f.Get(s.ctx, &out)
	if err != nil && s.usageVersion >= 1 {
		s.noteCallUsage(r.key, err)
	}
	if err != nil && spendLimited(err) {
		s.waitForSpend(r)
		return
	}
	if s.waiting[r.key] {
		delete(s.waiting, r.key)
		s.notifyParent()
	}
	if err != nil && lostWorker(err) && s.rounds[r.key] < maxRounds {
		// Every attempt ended with its worker gone: that says nothing about the node, so it gets a fresh set of
		// attempts instead of failing the rows that need it.
		s.rounds[r.key]++
		s.execute(r)
		return
	}
	if err != nil && s.waitForInfra(r, err) {
		return
	}
	if err != nil {
		s.onFailed(r, err)
	} else {
		s.outputs[r.key] = out
	}
	s.remaining--
}

// waitForSpend parks a node that stopped at the spend cap: the sweep learns it waits, and it runs again after a
// growing wait or at a resume signal.
func (s *issueState) waitForSpend(r nodeRun) {
	if !s.waiting[r.key] {
		s.waiting[r.key] = true
		s.notifyParent()
	}
	d := spendWait(s.waits[r.key])
	s.waits[r.key]++
	s.waitsFor[r.key] = NodeWait{Node: r.key, Kind: "spend_cap", Until: workflow.Now(s.ctx).Add(d)}
	s.executeAfter(r, d)
}

// waitForInfra reports whether a node's failure is the endpoint's, not the model's, with waits left: then the node
// runs again after waiting as long as the endpoint asked (on a durable timer that a resume signal cuts short).
func (s *issueState) waitForInfra(r nodeRun, err error) bool {
	if s.infraVersion < 1 || s.infraRounds[r.key] >= s.maxInfra {
		return false
	}
	d, ok := infraWait(err, s.infraRounds[r.key], r.modelNode)
	if !ok {
		return false
	}
	workflow.GetLogger(s.ctx).Warn("waiting for the endpoint", "node", r.key, "wait", d, "error", describe(err))
	s.infraRounds[r.key]++
	s.waitsFor[r.key] = NodeWait{Node: r.key, Kind: failureKind(err, r.modelNode), Until: workflow.Now(s.ctx).Add(d),
		Error: describe(err)}
	s.executeAfter(r, d)
	return true
}

// executeAfter runs a node again when a timer of d fires, or at once when a resume signal cancels the timer.
func (s *issueState) executeAfter(r nodeRun, d time.Duration) {
	tctx, wake := workflow.WithCancel(s.ctx)
	s.wakes[r.key] = wake
	s.sel.AddFuture(workflow.NewTimer(tctx, d), func(workflow.Future) {
		delete(s.wakes, r.key)
		delete(s.waitsFor, r.key)
		s.execute(r)
	})
}

// onFailed records a node's own failure, which its rows report.
func (s *issueState) onFailed(r nodeRun, err error) {
	s.failures[r.key] = describe(err)
	s.failureKinds[r.key] = failureKind(err, r.modelNode)
	s.rootFailure[r.key] = true
	s.res.FailedSteps++
}

// noteCallUsage keeps what a failed run of a node used on model calls (the CallUsage its error carries): its spent
// adds up over the node's runs, each run again after a wait paying anew; the answers it used count only if this
// run is the one that fails the node, whose last error this is.
func (s *issueState) noteCallUsage(key string, err error) {
	u, ok := callUsageOf(err)
	if !ok {
		return
	}
	s.spent[key] = addUsage(s.spent[key], u.Spent)
	s.answered[key] = u.Answered
}

// callUsageOf is the CallUsage a node activity's error carries: the detail of its ErrCallUsage cause, or for an
// attempt whose worker was lost (a heartbeat timeout) the spent its last heartbeat recorded.
func callUsageOf(err error) (api.CallUsage, bool) {
	var u api.CallUsage
	for e := err; e != nil; e = errors.Unwrap(e) {
		if app, ok := e.(*temporal.ApplicationError); ok && app.Type() == api.ErrCallUsage {
			return u, app.Details(&u) == nil
		}
	}
	var to *temporal.TimeoutError
	if errors.As(err, &to) && to.HasLastHeartbeatDetails() && to.LastHeartbeatDetails(&u) == nil {
		return api.CallUsage{Spent: u.Spent}, true
	}
	return u, false
}

// withCallUsage is a node's row fragment with what its failed runs spent, and, when it failed, the answers its last
// run used (noteCallUsage), added to its usage fields. The fragment itself is left as it was: it may be another
// arm's too.
func (s *issueState) withCallUsage(key string, fragment map[string]any) map[string]any {
	extra := s.spent[key]
	if s.rootFailure[key] {
		extra = addUsage(maps.Clone(extra), s.answered[key])
	}
	if len(extra) == 0 {
		return fragment
	}
	out := maps.Clone(fragment)
	if out == nil {
		out = map[string]any{}
	}
	// Sorted keys: a deterministic order.
	//workflowcheck:ignore
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if sum, ok := results.AddNumbers(out[k], extra[k]); ok {
			out[k] = sum
		}
	}
	return out
}

// addUsage adds usage b to a, field by field, making a when it is nil.
func addUsage(a, b map[string]float64) map[string]float64 {
	if len(b) > 0 && a == nil {
		a = map[string]float64{}
	}
	// Sums: the order is never observed.
	//workflowcheck:ignore
	for k, v := range b {
		a[k] += v
	}
	return a
}

// buildRows makes one row per arm from its nodes' row fragments, with the error of its first failed step.
func (s *issueState) buildRows() []results.Row {
	m := newRowMerger(s.plan)
	rows := make([]results.Row, 0, len(s.plan.Arms))
	for _, arm := range s.plan.Arms {
		row, _ := m.ArmRow(s.in.Instance.ID, arm, func(key string) (map[string]any, bool) {
			// A failed node has no fields but what its model calls used; its error is recorded below.
			if s.usageVersion >= 1 {
				return s.withCallUsage(key, s.outputs[key].Row), true
			}
			return s.outputs[key].Row, true
		}, func(row results.Row, st specs.ArmStep) {
			if s.rootFailure[st.Key] && row[results.FieldError] == nil {
				row[results.FieldError] = fmt.Sprintf("step %s: %s", st.ID, s.failures[st.Key])
				if k := s.failureKinds[st.Key]; s.infraVersion >= 1 && k != "" {
					row[results.FieldErrorKind] = k
				}
			}
		})
		rows = append(rows, row)
	}
	return rows
}

// record stores the rows in the run's content store, where the starter watching the sweep reads them
// (rowsChange), or, for a history from before, has the Record activity append them to its run folder's results.
func (s *issueState) record(rows []results.Row) error {
	input := api.RecordInput{Run: s.in.Run, Rows: rows}
	if s.rowsVersion < 1 {
		var n int
		if err := workflow.ExecuteActivity(bookkeepingOptions(s.ctx, s.queues), api.RecordName, input).
			Get(s.ctx, &n); err != nil {
			return fmt.Errorf("instance %s: recording rows: %w", s.in.Instance.ID, err)
		}
		return nil
	}
	f := func() workflow.Future {
		if s.runsLocal() {
			return workflow.ExecuteLocalActivity(localBookkeepingOptions(s.ctx), api.StoreRowsName, input)
		}
		return workflow.ExecuteActivity(bookkeepingOptions(s.ctx, s.queues), api.StoreRowsName, input)
	}()
	if err := f.Get(s.ctx, &s.res.RowsRef); err != nil {
		return fmt.Errorf("instance %s: storing rows: %w", s.in.Instance.ID, err)
	}
	return nil
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
	out := specs.Plan{Format: plan.Format}
	for _, arm := range plan.Arms {
		if slices.Contains(keep, results.ArmKey(arm)) {
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
	// localChange: the plan is loaded, and nodes that specs.RunsLocally picks run, as local activities in the
	// workflow worker (unless IssueInput.RemoteOnly). Changing which nodes RunsLocally picks needs a new version.
	localChange = "local-cheap-nodes"
	// agentChange: a node of the agent activity runs as the Agent child workflow, each turn its own activity, instead
	// of as one activity looping over its turns (which older histories replay through).
	agentChange = "agent-child-workflow"
	// failedUsageChange: what a node's model calls used counts in its rows also when the node failed (the usage its
	// error carries, api.CallUsage), and what its failed runs spent before it ran again counts however it ended.
	failedUsageChange = "failed-call-usage"
	// rowsChange: the rows go to the run's content store (StoreRowsName, local when runsLocal) and the result names
	// them (IssueResult.RowsRef), for the starter to write; before it, the Record activity appended them to the
	// results.jsonl of the run folder of whichever cpu worker ran it, a file no other machine sees.
	rowsChange = "rows-to-starter"
)

// maxInfraRounds bounds how often a node waits for the endpoint before its rows record the failure (a re-run of
// the finished sweep retries them): with backoff from a minute to 30, about 2 hours of server errors; with an
// endpoint asking for an hour each time, 8 hours.
const maxInfraRounds = 8

// maxProviderWait bounds one wait an endpoint asks for.
const maxProviderWait = 6 * time.Hour

// infraWait reports whether a node's failure is the endpoint's and transient (errkind.Kind.Waited), and how long to
// wait before running it again: what the endpoint asked for (ErrProviderWait), else a backoff of a minute doubling
// to 30 minutes by round.
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
	if errkind.Kind(failureKind(err, modelNode)).Waited() {
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

// failureKind names the kind of a node's failure: the kind an application error in the chain has as its type (a
// model call's or a step's, or an older activity's error type that stands for one: errkind.OfType), "lost_worker",
// "timeout" for a model-calling node that ran out of time (the endpoint did not answer), "step_timeout" for another
// node (a step too slow for its budget: the machine's, not the endpoint's), or "" when it has none. Only the kinds
// that are waited on decide anything in the workflow (infraWait); the rest is what the rows record.
func failureKind(err error, modelNode bool) string {
	if app := providerWait(err); app != nil {
		var w api.ProviderWait
		if app.Details(&w) == nil && w.Kind != "" {
			return w.Kind
		}
		return string(errkind.RateLimit)
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if app, ok := e.(*temporal.ApplicationError); ok {
			if k, ok := errkind.OfType(app.Type()); ok {
				return string(k)
			}
		}
	}
	if lostWorker(err) {
		return string(errkind.LostWorker)
	}
	var to *temporal.TimeoutError
	if errors.As(err, &to) {
		if modelNode {
			return string(errkind.Timeout)
		}
		return string(errkind.StepTimeout)
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
