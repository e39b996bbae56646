// Package steps holds the steps of ctxlab's DAG nodes as plain functions: one per declared kind (specs.Kind),
// registered for it in its file's init (registerStep), plus the agent's turns. A step reads its node's input, its
// params (decoded by the kind) and what its Env gives (the run's content store and folder, the logger, the snapshot
// text cache, model calls under the run's spend cap and limits, a heartbeat), and returns the node's output or an
// error; failures whose type is known where they happen are Error values.
//
// The package imports no Temporal (internal/layers checks it): package activities turns every registered kind into
// an activity (memo, attempt log, heartbeats, panic capture, the params and row-field checks, error classes), so the
// same step runs in a worker, in `starter grade` and in a test.
package steps

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/llm"
	"ctxlab/activities/rankings"
	"ctxlab/activities/repo"
	"ctxlab/dataset/swebench"
	"ctxlab/grading/executor"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/store/objects"
)

// Env is what a step may use. The activity that runs the step makes it for each attempt; a step reaches the run
// and the world through it alone.
type Env struct {
	// Node is the node's input: its instance, params, inputs, dataset and labels.
	Node api.NodeInput
	// Store is the run's content store; Objects its keyed objects (grade memos, rankings, the response cache,
	// embeddings), shared by every worker of the run; RunDir the run's folder on this machine (repository clones,
	// limits, the calls ledger).
	Store   cas.Store
	Objects objects.Store
	RunDir  string
	Log     zerolog.Logger
	// Text is the process's cache of snapshot text, shared by its steps (nil: none).
	Text *repo.TextCache
	// Rankings is the process's memo of chunked snapshots and BM25 rankings, shared by its retrieve steps (nil: one
	// of the attempt's own, which still reads and writes the run folder's stored rankings).
	Rankings *rankings.Memo
	// Models makes the step's model calls.
	Models Models
	// Heartbeat tells whoever runs the step that it is alive, during work that reports progress (a grade's test
	// runs); nil when no one listens.
	Heartbeat func()
	// Executor returns the grading executor a spec names (nil: executor.New).
	Executor func(name string) (executor.Executor, error)
	// Record appends a record to one of the run's records files (runfolder.CallsFile) wherever the run keeps them
	// (nil: the run folder's file).
	Record func(file string, v any) error
	// Shipped returns where a path of the starter's machine that the run reads (a local repository, a module proxy
	// folder) is on this one (nil: at the same path).
	Shipped func(ctx context.Context, path string) (string, error)
	// Turns runs an agent's turns, each as an activity of its own, for the agent node run as one activity
	// (agentStep); nil where no such activities exist.
	Turns AgentTurns
}

// Models is how a step's model calls are made: the response cache, the run's spend cap and provider limits (its
// budget), and the providers.
type Models struct {
	// Cache, when set, holds the response cache instead of the run's content store folder, so several runs share
	// answers. NoCache stops reading the cache (answers are still stored, each replacing the one before).
	Cache   objects.Store
	NoCache bool
	// Provider returns the provider of a model (nil: the offline stand-in, or the provider the environment names).
	Provider func(m specs.Model, tokenizer string) (llm.Provider, error)
	// Budget admits the step's paid calls under the run's spend cap and provider limits; a step without one
	// makes no paid call.
	Budget Budget
}

// localPath is where the path of the starter's machine is on this one (Env.Shipped).
func (e Env) localPath(ctx context.Context, path string) (string, error) {
	if e.Shipped == nil {
		return path, nil
	}
	return e.Shipped(ctx, path)
}

// objects is the run's keyed objects: Env.Objects, or the run folder when none was given.
func (e Env) objects() objects.Store {
	if e.Objects != nil {
		return e.Objects
	}
	return objects.Dir{Root: e.RunDir}
}

// Attempt is what one attempt of a step records beside its output, for the attempt log.
type Attempt struct {
	// Usage counts the attempt's model calls.
	Usage runlog.Usage
	// Reused is the memo key of work another node already did that this attempt reused (a grade of an equal patch).
	Reused string
	// Calls is the attempt's model calls' usage as row fields, which a failed attempt's error carries.
	Calls CallUsage
}

// job is one attempt of a step, with lazily loaded shared inputs.
type job struct {
	env Env
	// in and store are env.Node and env.Store, by the names the steps use.
	in    api.NodeInput
	store cas.Store
	inst  *swebench.Instance
	// usage and reused are the Attempt's.
	usage  *runlog.Usage
	reused *string
	calls  *CallUsage
	// readErr is the first read error a reader swallowed: it fails the attempt after the step returns.
	readMu  sync.Mutex
	readErr error
}

// step is a kind's step: what its activity does, with the node's params decoded by the kind.
type step[P any] func(ctx context.Context, j *job, p P) (api.NodeOutput, error)

// stepsByKind maps each declared kind's name to its step (registerStep).
var stepsByKind = map[string]func(context.Context, *job) (api.NodeOutput, error){}

// registerStep makes a step the step of its kind (a specs declaration): Run decodes the node's params by the kind,
// from its defaults, strictly, and runs it. Each step's file calls it in its init.
func registerStep[P any](k specs.Kind[P], run step[P]) {
	if _, declared := specs.Catalog[k.Name]; !declared {
		panic("steps: " + k.Name + " is not a declared kind (specs.Declare)")
	}
	if _, dup := stepsByKind[k.Name]; dup {
		panic("steps: " + k.Name + " registered twice")
	}
	stepsByKind[k.Name] = func(ctx context.Context, j *job) (api.NodeOutput, error) {
		p, err := k.Decode(j.in.Params)
		if err != nil {
			return api.NodeOutput{}, permanentf(api.ErrBadInput, "%s: parameters: %v", j.in.Step, err)
		}
		return run(ctx, j, p)
	}
}

// Kinds lists the kinds that have a step, sorted.
func Kinds() []string { return slices.Sorted(maps.Keys(stepsByKind)) }

// Run runs one attempt of a kind's step on env's node, recording its model usage and reuse in att.
func Run(ctx context.Context, kind string, env Env, att *Attempt) (api.NodeOutput, error) {
	run, ok := stepsByKind[kind]
	if !ok {
		return api.NodeOutput{}, permanentf(api.ErrUnsupported, "%s: kind %q has no step", env.Node.Step, kind)
	}
	return attempt(ctx, env, att, run)
}

// attempt runs body as one attempt on env's node. A read error a reader swallowed fails it once body returns
// (retryable: the output would lack a file the store failed to read).
func attempt(ctx context.Context, env Env, att *Attempt,
	body func(context.Context, *job) (api.NodeOutput, error)) (api.NodeOutput, error) {
	j := &job{env: env, in: env.Node, store: env.Store, usage: &att.Usage, reused: &att.Reused,
		calls: &att.Calls}
	out, err := body(ctx, j)
	if rerr := j.readFailure(); err == nil && rerr != nil {
		err = rerr
	}
	return out, err
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
func (j *job) input(name string) (api.NodeOutput, error) {
	out, ok := j.in.Inputs[name]
	if !ok {
		return out, permanentf(api.ErrBadInput, "%s: missing input %q", j.in.Step, name)
	}
	return out, nil
}

// loadInstance reads an instance row from the run's store.
func loadInstance(ctx context.Context, s cas.Store, ref api.InstanceRef) (swebench.Instance, error) {
	var in swebench.Instance
	if err := cas.GetJSON(ctx, s, ref.Ref, &in); err != nil {
		return in, fmt.Errorf("instance %s: %w", ref.ID, err)
	}
	return in, nil
}
