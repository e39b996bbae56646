package activities

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/executor"
	"ctxlab/activities/llm"
	"ctxlab/activities/rankings"
	"ctxlab/activities/repo"
	"ctxlab/activities/steps"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
)

// Activities holds the dependencies of every activity. Its exported methods are the activities; the steps they run
// (package steps) get what they use from it through a steps.Env.
type Activities struct {
	// Runs is the folder holding one folder per experiment.
	Runs string
	Log  zerolog.Logger
	// StoreURL chooses the content store: empty for each run folder's cas/, a file:// or s3:// URL for an object
	// store shared by workers on several machines (one folder per run inside it), or a plain folder path.
	StoreURL string
	// CacheDir, when set, holds the response cache instead of each run's content store folder, so several
	// experiments share answers. NoCache stops reading the cache (answers are still stored).
	CacheDir string
	NoCache  bool
	// FileCacheBytes bounds the snapshot files' text this process keeps in memory across activities (each read of
	// a file through a step's reader goes through it): 0 means repo.DefaultTextCacheBytes, negative none. It is read
	// when the first node runs. A quarter of it bounds, beside it, the chunks retrieve steps keep (their bounds only).
	FileCacheBytes int64

	mu       sync.Mutex
	stores   map[string]cas.Store
	budgets  budgets
	textOnce sync.Once
	text     *repo.TextCache
	rankOnce sync.Once
	rank     *rankings.Memo
	// newProvider and newExecutor replace the steps' providers and grading executors (tests count calls or fail
	// them); nil for the real ones.
	newProvider func(m specs.Model, tokenizer string) (llm.Provider, error)
	newExecutor func(name string) (executor.Executor, error)
}

// CacheEnv is the environment variable New reads CacheDir from.
const CacheEnv = "CTXLAB_CACHE"

// StoreEnv is the environment variable New reads StoreURL from.
const StoreEnv = "CTXLAB_STORE"

// FileCacheEnv is the environment variable New reads FileCacheBytes from, in MiB (0: no cache).
const FileCacheEnv = "CTXLAB_FILE_CACHE_MB"

// New returns activities writing under the runs folder, with the content store $CTXLAB_STORE names, the
// response cache folder $CTXLAB_CACHE names and the bound on snapshot text in memory $CTXLAB_FILE_CACHE_MB sets.
func New(runs string, log zerolog.Logger) *Activities {
	a := &Activities{Runs: runs, Log: log, StoreURL: os.Getenv(StoreEnv), CacheDir: os.Getenv(CacheEnv),
		stores: map[string]cas.Store{}}
	if v := os.Getenv(FileCacheEnv); v != "" {
		mb, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil || mb < 0:
			log.Warn().Str(FileCacheEnv, v).Msg("not a number of MiB: the default bound on cached snapshot text applies")
		case mb == 0:
			a.FileCacheBytes = -1
		default:
			a.FileCacheBytes = mb << 20
		}
	}
	return a
}

// textCache is the process's cache of snapshot text (nil when FileCacheBytes is negative).
func (a *Activities) textCache() *repo.TextCache {
	a.textOnce.Do(func() {
		switch {
		case a.FileCacheBytes == 0:
			a.text = repo.NewTextCache(repo.DefaultTextCacheBytes)
		case a.FileCacheBytes > 0:
			a.text = repo.NewTextCache(a.FileCacheBytes)
		}
	})
	return a.text
}

// rankings is the process's memo of chunked snapshots and BM25 rankings. It keeps chunks without their text (the
// text cache holds that), in a quarter of the text cache's bound (FileCacheBytes), and only when there is a text
// cache.
func (a *Activities) rankings() *rankings.Memo {
	a.rankOnce.Do(func() {
		var bound int64
		if t := a.textCache(); t != nil {
			bound = t.Max() / 4
		}
		a.rank = rankings.NewMemo(bound, a.Log)
	})
	return a.rank
}

// The types the workflows exchange with the activities live in package api, below both; these aliases keep
// callers of package activities unchanged.
type (
	// InstanceRef points at one dataset row stored in the run's content store.
	InstanceRef = api.InstanceRef
	// NodeInput is what every DAG node activity receives.
	NodeInput = api.NodeInput
	// NodeOutput is what every DAG node activity returns.
	NodeOutput = api.NodeOutput
)

// kindActivity is the activity of a declared kind: its step (package steps) run as a node (memo, attempt log,
// heartbeat, panic capture, the params and row-field checks, error scrubbing and classes).
func (a *Activities) kindActivity(kind string) func(context.Context, NodeInput) (NodeOutput, error) {
	return func(ctx context.Context, in NodeInput) (NodeOutput, error) {
		return a.node(ctx, in, kind, func(ctx context.Context, env steps.Env, att *steps.Attempt) (NodeOutput, error) {
			return steps.Run(ctx, kind, env, att)
		})
	}
}

// runKind runs the activity of a declared kind, as a worker would.
func (a *Activities) runKind(ctx context.Context, kind string, in NodeInput) (NodeOutput, error) {
	return a.kindActivity(kind)(ctx, in)
}

// Checkout, Grade and Agent are their kinds' activities, for callers outside a worker (the starter's grade command,
// the workflows' tests).

// Checkout is the checkout kind's activity.
func (a *Activities) Checkout(ctx context.Context, in NodeInput) (NodeOutput, error) {
	return a.runKind(ctx, specs.Checkout.Name, in)
}

// Grade is the grade kind's activity.
func (a *Activities) Grade(ctx context.Context, in NodeInput) (NodeOutput, error) {
	return a.runKind(ctx, specs.Grade.Name, in)
}

// Agent is the agent kind's activity: the whole trajectory in one activity (agentStep).
func (a *Activities) Agent(ctx context.Context, in NodeInput) (NodeOutput, error) {
	return a.runKind(ctx, specs.Agent.Name, in)
}

// Functions maps activity names to their functions, for registration with a worker.
func (a *Activities) Functions() map[string]any {
	fns := map[string]any{
		LoadDatasetName: a.LoadDataset,
		LoadPlanName:    a.LoadPlan,
		RecordName:      a.Record,
		SummarizeName:   a.Summarize,
	}
	for _, kind := range steps.Kinds() {
		fns[kind] = a.kindActivity(kind)
	}
	return fns
}

// RunDir is the folder of one experiment.
func (a *Activities) RunDir(run string) string { return filepath.Join(a.Runs, run) }

// Store returns the content store of a run.
func (a *Activities) Store(run string) (cas.Store, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.stores[run]; ok {
		return s, nil
	}
	s, err := bucket.Open(context.Background(), a.StoreURL, run, runfolder.CAS(a.RunDir(run)))
	if err != nil {
		return nil, err
	}
	a.stores[run] = s
	return s, nil
}

// env is what the step of a node's attempt may use: the run's store and folder, this process's caches, the run's
// budget and the log, and heartbeats to Temporal.
func (a *Activities) env(ctx context.Context, in NodeInput, store cas.Store) steps.Env {
	return steps.Env{Node: in, Store: store, RunDir: a.RunDir(in.Run), Log: a.Log, Text: a.textCache(),
		Rankings: a.rankings(),
		Models: steps.Models{CacheDir: a.CacheDir, NoCache: a.NoCache, Provider: a.newProvider,
			Budget: a.budget(ctx, in)},
		Heartbeat: func() { recordHeartbeat(ctx) }, Executor: a.newExecutor, Turns: agentTurns{a}}
}
