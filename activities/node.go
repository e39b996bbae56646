package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"ctxlab/activities/api"
	"ctxlab/activities/llm"
	"ctxlab/activities/steps"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/store/objects"
)

// heartbeatEvery is how often a running node tells Temporal it is alive; the workflow's heartbeat timeout is a few
// times this, so a dead worker's node is retried within seconds.
const heartbeatEvery = 2 * time.Second

// checkParams refuses a node with a param its activity's params struct does not declare, or a value it cannot hold,
// as specs.Validate does at compile time. It runs for every activity, those that read no params included, so a plan
// built without the spec compiler cannot pass a param that silently means nothing.
func checkParams(activity string, in api.NodeInput) error {
	problems, err := specs.CheckParams(activity, in.Params)
	if err != nil {
		return steps.Permanent(api.ErrBadInput, fmt.Sprintf("%s: parameters: %v", in.Step, err))
	}
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Msg
	}
	return steps.Permanent(api.ErrBadInput, fmt.Sprintf("%s: parameters: %s", in.Step, strings.Join(msgs, "; ")))
}

// nodeBody is what a node activity runs: one attempt of a step on env's node.
type nodeBody func(ctx context.Context, env steps.Env, att *steps.Attempt) (api.NodeOutput, error)

// node runs body as the activity name with memoization, attempt logging, heartbeats and panic capture, and gives its
// failure the type, message and retryability Temporal records (activityError).
func (a *Activities) node(ctx context.Context, in api.NodeInput, name string, body nodeBody) (api.NodeOutput, error) {
	out, err := a.attempt(ctx, in, name, body)
	return out, activityError(err)
}

// attempt is node's work, its failures as steps.Error values.
func (a *Activities) attempt(ctx context.Context, in api.NodeInput, name string, body nodeBody) (out api.NodeOutput, err error) {
	store, err := a.Store(in.Run)
	if err != nil {
		return out, err
	}
	objs, err := a.Objects(in.Run)
	if err != nil {
		return out, stepError(in.Step, err) // its kind (a store that is not the starter's) on the rows
	}
	rec := runlog.Attempt{Instance: in.Instance.ID, Node: in.Node, Step: in.Step, Activity: name}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		rec.Attempt, rec.Workflow = info.Attempt, info.WorkflowExecution.ID
	}
	memo := runfolder.NodeMemoKey(in.Instance.ID, in.Node)
	key, err := memoKey(name, in)
	if err != nil {
		return out, steps.Permanent(api.ErrBadInput, fmt.Sprintf("%s: %v", in.Step, err))
	}
	if cached, ok := readMemo(ctx, objs, memo, key); ok {
		rec.Event, rec.Output = runlog.EventMemo, cached.Ref
		a.logAttempt(in.Run, rec)
		return cached, nil
	}
	rec.Event = runlog.EventStart
	rec.Params, rec.Inputs = a.attemptRefs(ctx, store, in)
	a.logAttempt(in.Run, rec)
	started := time.Now()

	var att steps.Attempt
	att.Calls.Carry(earlierAttemptsSpent(ctx))
	stop := a.heartbeatWith(ctx, func() []any { return spentDetails(&att.Calls) })
	defer stop()
	defer func() {
		if r := recover(); r != nil {
			a.Log.Error().Str("step", in.Step).Str("instance", in.Instance.ID).Interface("panic", r).
				Str("stack", string(debug.Stack())).Msg("activity panicked")
			err = steps.Permanent(api.ErrPanic, fmt.Sprintf("%s: internal error: %v", in.Step, r))
		}
		a.logAttemptEnd(in.Run, rec, &att, started, out, err)
		if err != nil {
			err = steps.WithUsage(err, att.Calls.Failed())
			flushSpent(ctx, &att.Calls) // before the failure is reported, whatever the failure
		}
	}()

	if d := in.Debug.SlowActivities.D(); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
	if err = checkParams(declaringActivity(name), in); err == nil {
		out, err = body(ctx, a.env(ctx, in, store, objs), &att)
	}
	if err == nil {
		err = checkRowFields(declaringActivity(name), in, out)
	}
	err = scrubError(err)
	if err != nil && ctx.Err() != nil && workerStopping(ctx) {
		return out, &steps.Error{Type: api.ErrWorkerStopped, Message: in.Step + ": worker stopped while the step ran",
			Retryable: true}
	}
	if err != nil {
		return out, stepError(in.Step, err)
	}
	out.Row = att.Calls.AddSpentTo(out.Row)
	// Written before Temporal records completion: a worker killed in between does not redo the work.
	return a.writeMemo(ctx, objs, memo, key, in, out), nil
}

// writeMemo stores a node's output under its memo key and returns the output the memo holds: when another attempt
// of the node (a worker taken for dead that went on) stored one under the same key first, that one, so the memo and
// the workflow's history agree whichever attempt Temporal records. A memo of other inputs is replaced.
func (a *Activities) writeMemo(ctx context.Context, objs objects.Store, memo, key string, in api.NodeInput,
	out api.NodeOutput) api.NodeOutput {
	b, err := runfolder.EncodeMemo(key, out)
	if err == nil {
		var existing []byte
		if existing, err = objs.Create(ctx, memo, b, false); err == nil && existing != nil {
			var first api.NodeOutput
			if k, ok := runfolder.DecodeMemo(existing, &first); ok && k == key {
				return first
			}
			err = objs.Put(ctx, memo, b)
		}
	}
	if err != nil {
		a.Log.Warn().Err(err).Str("node", in.Node).Msg("could not memoize node output")
	}
	return out
}

// logAttemptEnd records how an attempt that started ended: done with its output, or failed with its error.
func (a *Activities) logAttemptEnd(run string, rec runlog.Attempt, att *steps.Attempt, started time.Time, out api.NodeOutput, err error) {
	rec.DurationMS = time.Since(started).Milliseconds()
	rec.Usage = att.Usage
	rec.Reused = att.Reused
	if err != nil {
		rec.Event, rec.Error = runlog.EventFail, err.Error()
		var se *steps.Error
		if errors.As(err, &se) {
			rec.ErrorType = se.Type
		}
	} else {
		rec.Event, rec.Output = runlog.EventDone, out.Ref
	}
	a.logAttempt(run, rec)
}

// scrubError returns err, or, when its text holds a secret the process holds (llm.SecretValues), an error of the
// same type and retryability whose text has it redacted: error text reaches attempts.jsonl, logs and Temporal
// history.
func scrubError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := llm.ScrubSecrets(msg)
	if clean == msg {
		return err
	}
	var se *steps.Error
	if errors.As(err, &se) {
		scrubbed := *se
		scrubbed.Message = clean
		return &scrubbed
	}
	return errors.New(clean)
}

// attemptRefs stores the node's parameters and collects its inputs' references, so an audit can open them.
func (a *Activities) attemptRefs(ctx context.Context, store cas.Store, in api.NodeInput) (cas.Ref, map[string]cas.Ref) {
	var params cas.Ref
	if len(in.Params) > 0 {
		params, _ = cas.PutJSON(ctx, store, in.Params)
	}
	var inputs map[string]cas.Ref
	for name, out := range in.Inputs {
		if out.Ref == "" {
			continue
		}
		if inputs == nil {
			inputs = map[string]cas.Ref{}
		}
		inputs[name] = out.Ref
	}
	return params, inputs
}

// NodeMemoPath is where a run folder keeps the output of a node that last succeeded on an instance.
func NodeMemoPath(runDir, instance, node string) string {
	return runfolder.NodeMemo(runDir, instance, node)
}

// nodeMemoVersion starts every node memo key; change it when what a node computes from the same inputs changes.
const nodeMemoVersion = "ctxlab-node-v1"

// memoKey is the digest of everything a node reads: its plan key (its activity, params and the plan keys of its
// inputs), its params, the whole dataset row (by content: InstanceRef.Ref), the outputs of its inputs (the snapshot
// among them) and the repository template. A memo is reused only under the same key, so an edited dataset row, a
// changed upstream output or another repository runs the node again. The row counts whole rather than the fields
// each kind reads: a list per kind would be one more thing to keep true as activities change, and a field missing
// from it is a stale result. What an edit redoes is cheap to redo: a model call whose prompt is unchanged is
// answered from the response cache, a grade of the same patch under the same test patch from the grade memo. The
// step label, the run's name and the debug settings are not inputs. A kind that declares a version of what it
// computes (specs.Kind.CodeVersion) has it in the key too.
func memoKey(activity string, in api.NodeInput) (string, error) {
	b, err := json.Marshal(struct {
		Version  string                    `json:"v"`
		Code     string                    `json:"code,omitempty"`
		Node     string                    `json:"node"`
		Instance cas.Ref                   `json:"instance"`
		Params   map[string]any            `json:"params,omitempty"`
		Inputs   map[string]api.NodeOutput `json:"inputs,omitempty"`
		Repos    string                    `json:"repos,omitempty"`
	}{nodeMemoVersion, specs.Catalog[activity].CodeVersion, in.Node, in.Instance.Ref, in.Params, in.Inputs, in.Dataset.Repos})
	if err != nil {
		return "", fmt.Errorf("memo key: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// MemoizedOutputs returns the outputs of the plan's nodes on an instance that a sweep of the plan would take from
// their memos (in the run's objects objs) now: those memoized under exactly the inputs the plan gives them (this
// row's content, the memoized outputs of their inputs), by node key. A node whose input has no such output is left
// out.
func MemoizedOutputs(ctx context.Context, objs objects.Store, plan specs.Plan, inst api.InstanceRef,
	dataset specs.Dataset) map[string]api.NodeOutput {
	outputs := map[string]api.NodeOutput{}
	for _, n := range plan.Nodes { // inputs come first
		in := api.NodeInput{Instance: inst, Node: n.Key, Params: n.Params, Inputs: map[string]api.NodeOutput{},
			Dataset: dataset}
		whole := true
		for name, from := range n.Inputs {
			out, ok := outputs[from]
			whole = whole && ok
			in.Inputs[name] = out
		}
		if !whole {
			continue
		}
		key, err := memoKey(n.Activity, in)
		if err != nil {
			continue
		}
		if out, ok := readMemo(ctx, objs, runfolder.NodeMemoKey(inst.ID, n.Key), key); ok {
			outputs[n.Key] = out
		}
	}
	return outputs
}

// ReadNodeMemo returns the output a node last memoized on an instance (in the run's objects objs), whatever its
// inputs were (an audit or report reads it beside the rows of the same sweep); false when the node has not succeeded
// there (or its memo does not decode). A node itself reuses a memo only under its own key.
func ReadNodeMemo(ctx context.Context, objs objects.Store, instance, node string) (api.NodeOutput, bool) {
	var out api.NodeOutput
	b, err := objs.Get(ctx, runfolder.NodeMemoKey(instance, node))
	if err != nil {
		return out, false
	}
	_, ok := runfolder.DecodeMemo(b, &out)
	return out, ok
}

// readMemo returns the memo under the objects' key memo when it was made from the inputs key names.
func readMemo(ctx context.Context, objs objects.Store, memo, key string) (api.NodeOutput, bool) {
	var out api.NodeOutput
	b, err := objs.Get(ctx, memo)
	if err != nil {
		return out, false
	}
	if k, ok := runfolder.DecodeMemo(b, &out); !ok || k != key {
		return api.NodeOutput{}, false
	}
	return out, true
}

func (a *Activities) logAttempt(run string, rec runlog.Attempt) {
	rec.Time = time.Now().UTC()
	if err := a.record(run, runfolder.AttemptsFile, rec); err != nil {
		a.Log.Warn().Err(err).Msg("attempt log")
	}
}

// heartbeat records heartbeats until stop is called, when ctx belongs to an activity.
func (a *Activities) heartbeat(ctx context.Context) (stop func()) {
	return a.heartbeatWith(ctx, func() []any { return nil })
}

// heartbeatWith is heartbeat whose heartbeats record the details details returns, which the activity's next
// attempt reads (activity.GetHeartbeatDetails).
func (a *Activities) heartbeatWith(ctx context.Context, details func() []any) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, details()...)
			}
		}
	}()
	return func() { close(done) }
}

// recordHeartbeat tells Temporal the activity of ctx is alive (nothing outside an activity).
func recordHeartbeat(ctx context.Context) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx)
	}
}

// workerStopping reports whether the activity's worker is shutting down.
func workerStopping(ctx context.Context) bool {
	if !activity.IsActivity(ctx) {
		return false
	}
	select {
	case <-activity.GetWorkerStopChannel(ctx):
		return true
	default:
		return false
	}
}
