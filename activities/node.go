package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/llm"
	"ctxlab/activities/repo"
	"ctxlab/dataset/swebench"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// heartbeatEvery is how often a running node tells Temporal it is alive; the workflow's heartbeat timeout is a few
// times this, so a dead worker's node is retried within seconds.
const heartbeatEvery = 2 * time.Second

// job is one attempt of a node activity, with lazily loaded shared inputs.
type job struct {
	a     *Activities
	in    NodeInput
	store cas.Store
	inst  *swebench.Instance
	// usage counts this attempt's model calls for attempts.jsonl.
	usage runlog.Usage
	// calls is their usage as row fields, which a failed attempt's error carries (withCallUsage).
	calls callUsage
	// reused is the memo key of work another node already did that this attempt reused (a grade of an equal patch).
	reused string
	// readErr is the first read error a reader swallowed: it fails the attempt after the body returns.
	readMu  sync.Mutex
	readErr error
}

// failRead records a read error that a caller could only see as a missing file.
func (j *job) failRead(err error) {
	j.readMu.Lock()
	defer j.readMu.Unlock()
	if j.readErr == nil {
		j.readErr = err
	}
}

// readFailure returns the first read error failRead recorded.
func (j *job) readFailure() error {
	j.readMu.Lock()
	defer j.readMu.Unlock()
	return j.readErr
}

// checkParams refuses a node with a param its activity's params struct does not declare, or a value it cannot hold,
// as specs.Validate does at compile time. It runs for every activity, those that read no params included, so a plan
// built without the spec compiler cannot pass a param that silently means nothing.
func (j *job) checkParams(activity string) error {
	problems, err := specs.CheckParams(activity, j.in.Params)
	if err != nil {
		return permanentf(ErrBadInput, "%s: parameters: %v", j.in.Step, err)
	}
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Msg
	}
	return permanentf(ErrBadInput, "%s: parameters: %s", j.in.Step, strings.Join(msgs, "; "))
}

// instance returns the dataset row this node works on.
func (j *job) instance(ctx context.Context) (swebench.Instance, error) {
	if j.inst != nil {
		return *j.inst, nil
	}
	in, err := loadInstance(ctx, j.store, j.in.Instance)
	if err != nil {
		return in, err
	}
	j.inst = &in
	return in, nil
}

// instanceAndSnapshot returns the node's instance and its repository snapshot (input checkout): the start of most
// steps.
func (j *job) instanceAndSnapshot(ctx context.Context) (swebench.Instance, repo.Manifest, error) {
	inst, err := j.instance(ctx)
	if err != nil {
		return inst, repo.Manifest{}, err
	}
	m, err := j.snapshot(ctx)
	return inst, m, err
}

// input returns a named input's output.
func (j *job) input(name string) (NodeOutput, error) {
	out, ok := j.in.Inputs[name]
	if !ok {
		return out, permanentf(ErrBadInput, "%s: missing input %q", j.in.Step, name)
	}
	return out, nil
}

// node runs body as the activity name with memoization, attempt logging, heartbeats and panic capture.
func (a *Activities) node(ctx context.Context, in NodeInput, name string,
	body func(context.Context, *job) (NodeOutput, error)) (out NodeOutput, err error) {
	store, err := a.Store(in.Run)
	if err != nil {
		return out, err
	}
	rec := runlog.Attempt{Instance: in.Instance.ID, Node: in.Node, Step: in.Step, Activity: name}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		rec.Attempt, rec.Workflow = info.Attempt, info.WorkflowExecution.ID
	}
	memo := a.memoPath(in)
	key, err := memoKey(name, in)
	if err != nil {
		return out, permanentf(ErrBadInput, "%s: %v", in.Step, err)
	}
	if cached, ok := readMemo(memo, key); ok {
		rec.Event, rec.Output = runlog.EventMemo, cached.Ref
		a.logAttempt(in.Run, rec)
		return cached, nil
	}
	rec.Event = runlog.EventStart
	rec.Params, rec.Inputs = a.attemptRefs(ctx, store, in)
	a.logAttempt(in.Run, rec)
	started := time.Now()

	j := &job{a: a, in: in, store: store}
	j.calls.carryFromEarlierAttempts(ctx)
	stop := a.heartbeatWith(ctx, j.calls.heartbeatDetails)
	defer stop()
	defer func() {
		if r := recover(); r != nil {
			a.Log.Error().Str("step", in.Step).Str("instance", in.Instance.ID).Interface("panic", r).
				Str("stack", string(debug.Stack())).Msg("activity panicked")
			err = permanentf(ErrPanic, "%s: internal error: %v", in.Step, r)
		}
		a.logAttemptEnd(rec, j, started, out, err)
		err = j.calls.withCallUsage(ctx, err)
	}()

	if d := in.Debug.SlowActivities.D(); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
	if err = j.checkParams(declaringActivity(name)); err == nil {
		out, err = body(ctx, j)
	}
	if rerr := j.readFailure(); err == nil && rerr != nil {
		err = rerr // retryable: the output would lack a file the store failed to read
	}
	if err == nil {
		err = checkRowFields(declaringActivity(name), in, out)
	}
	err = scrubError(err)
	if err != nil && ctx.Err() != nil && workerStopping(ctx) {
		return out, temporal.NewApplicationError(in.Step+": worker stopped while the step ran", ErrWorkerStopped)
	}
	if err != nil {
		return out, stepError(in.Step, err)
	}
	out.Row = j.calls.addSpentTo(out.Row)
	// Written before Temporal records completion: a worker killed in between does not redo the work.
	if werr := writeMemo(memo, key, out); werr != nil {
		a.Log.Warn().Err(werr).Str("node", in.Node).Msg("could not memoize node output")
	}
	return out, nil
}

// logAttemptEnd records how an attempt that started ended: done with its output, or failed with its error.
func (a *Activities) logAttemptEnd(rec runlog.Attempt, j *job, started time.Time, out NodeOutput, err error) {
	rec.DurationMS = time.Since(started).Milliseconds()
	rec.Usage = j.usage
	rec.Reused = j.reused
	if err != nil {
		rec.Event, rec.Error = runlog.EventFail, err.Error()
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			rec.ErrorType = app.Type()
		}
	} else {
		rec.Event, rec.Output = runlog.EventDone, out.Ref
	}
	a.logAttempt(j.in.Run, rec)
}

// scrubError returns err, or, when its text holds a secret the process holds (llm.SecretValues), an error of the
// same Temporal type and retryability whose text has it redacted: error text reaches attempts.jsonl, logs and
// Temporal history.
func scrubError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := llm.ScrubSecrets(msg)
	if clean == msg {
		return err
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return temporal.NewApplicationErrorWithOptions(clean, app.Type(), temporal.ApplicationErrorOptions{
			NonRetryable: app.NonRetryable()})
	}
	return errors.New(clean)
}

// attemptRefs stores the node's parameters and collects its inputs' references, so an audit can open them.
func (a *Activities) attemptRefs(ctx context.Context, store cas.Store, in NodeInput) (cas.Ref, map[string]cas.Ref) {
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

func (a *Activities) memoPath(in NodeInput) string {
	return NodeMemoPath(a.RunDir(in.Run), in.Instance.ID, in.Node)
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
// step label, the run's name and the debug settings are not inputs. A kind whose code keeps a version of what it
// computes (codeVersions) has it in the key too.
func memoKey(activity string, in NodeInput) (string, error) {
	b, err := json.Marshal(struct {
		Version  string                `json:"v"`
		Code     string                `json:"code,omitempty"`
		Node     string                `json:"node"`
		Instance cas.Ref               `json:"instance"`
		Params   map[string]any        `json:"params,omitempty"`
		Inputs   map[string]NodeOutput `json:"inputs,omitempty"`
		Repos    string                `json:"repos,omitempty"`
	}{nodeMemoVersion, codeVersions[activity], in.Node, in.Instance.Ref, in.Params, in.Inputs, in.Dataset.Repos})
	if err != nil {
		return "", fmt.Errorf("memo key: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// codeVersions are the versions of what some kinds compute, by activity: a grade's outcome depends on the grader's
// code (the harness's test commands and log parsers), so bumping gradeMemoVersion grades again, also where a grade
// step's own memo would have answered. A measure's row names the tokenizer that counted it since measureMemoVersion
// v2: a memo of v1 measures again (cheap), so that no row of a re-run lacks it.
var codeVersions = map[string]string{"grade": gradeMemoVersion, "measure": measureMemoVersion}

// measureMemoVersion is the version of what a measure step computes (see codeVersions).
const measureMemoVersion = "ctxlab-measure-v2"

// MemoizedOutputs returns the outputs of the plan's nodes on an instance that a sweep of the plan would take from
// their memos now: those memoized under exactly the inputs the plan gives them (this row's content, the memoized
// outputs of their inputs), by node key. A node whose input has no such output is left out.
func MemoizedOutputs(runDir string, plan specs.Plan, inst InstanceRef, dataset specs.Dataset) map[string]NodeOutput {
	outputs := map[string]NodeOutput{}
	for _, n := range plan.Nodes { // inputs come first
		in := NodeInput{Instance: inst, Node: n.Key, Params: n.Params, Inputs: map[string]NodeOutput{},
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
		if out, ok := readMemo(NodeMemoPath(runDir, inst.ID, n.Key), key); ok {
			outputs[n.Key] = out
		}
	}
	return outputs
}

// nodeMemo is a node's memo file: its output and the key of the inputs it was computed from.
type nodeMemo struct {
	Key string `json:"key"`
	NodeOutput
}

// ReadNodeMemo returns the output a node last memoized on an instance, whatever its inputs were (an audit or report
// reads it beside the rows of the same sweep); false when the node has not succeeded there (or its memo does not
// decode). A node itself reuses a memo only under its own key.
func ReadNodeMemo(runDir, instance, node string) (NodeOutput, bool) {
	m, ok := readMemoFile(NodeMemoPath(runDir, instance, node))
	return m.NodeOutput, ok
}

// readMemo returns the memo at path when it was made from the inputs key names.
func readMemo(path, key string) (NodeOutput, bool) {
	m, ok := readMemoFile(path)
	if !ok || m.Key != key {
		return NodeOutput{}, false
	}
	return m.NodeOutput, true
}

func readMemoFile(path string) (nodeMemo, bool) {
	var m nodeMemo
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &m) != nil {
		return m, false
	}
	return m, true
}

func writeMemo(path, key string, out NodeOutput) error {
	b, err := json.Marshal(nodeMemo{Key: key, NodeOutput: out})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (a *Activities) logAttempt(run string, rec runlog.Attempt) {
	rec.Time = time.Now().UTC()
	if err := runlog.Append(runfolder.Attempts(a.RunDir(run)), rec); err != nil {
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
