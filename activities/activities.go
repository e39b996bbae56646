package activities

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/activities/llm"
	"ctxlab/activities/rankings"
	"ctxlab/activities/repo"
	"ctxlab/activities/steps"
	"ctxlab/grading/executor"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
	"ctxlab/store/objects"
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
	// CacheDir (a folder, or a file:// or s3:// URL), when set, holds the response cache instead of each run's
	// content store folder, so several experiments share answers. NoCache stops reading the cache (answers are still
	// stored).
	CacheDir string
	NoCache  bool
	// FileCacheBytes bounds the snapshot files' text this process keeps in memory across activities (each read of
	// a file through a step's reader goes through it): 0 means repo.DefaultTextCacheBytes, negative none. It is read
	// when the first node runs. A quarter of it bounds, beside it, the chunks retrieve steps keep (their bounds only).
	FileCacheBytes int64

	mu        sync.Mutex
	stores    map[string]cas.Store
	objects   map[string]objects.Store
	budgets   budgets
	shippers  map[string]*runlog.Shipper // by run and file, with a shared store
	cacheOnce sync.Once
	cache     objects.Store
	textOnce  sync.Once
	text      *repo.TextCache
	rankOnce  sync.Once
	rank      *rankings.Memo
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
	a := &Activities{Runs: runs, Log: log, StoreURL: os.Getenv(StoreEnv), CacheDir: os.Getenv(CacheEnv)}
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

// kindActivity is the activity of a declared kind: its step (package steps) run as a node (memo, attempt log,
// heartbeat, panic capture, the params and row-field checks, error scrubbing and classes).
func (a *Activities) kindActivity(kind string) func(context.Context, api.NodeInput) (api.NodeOutput, error) {
	return func(ctx context.Context, in api.NodeInput) (api.NodeOutput, error) {
		return a.node(ctx, in, kind, func(ctx context.Context, env steps.Env, att *steps.Attempt) (api.NodeOutput, error) {
			return steps.Run(ctx, kind, env, att)
		})
	}
}

// runKind runs the activity of a declared kind, as a worker would.
func (a *Activities) runKind(ctx context.Context, kind string, in api.NodeInput) (api.NodeOutput, error) {
	return a.kindActivity(kind)(ctx, in)
}

// Checkout, Grade and Agent are their kinds' activities, for callers outside a worker (the starter's grade command,
// the workflows' tests).

// Checkout is the checkout kind's activity.
func (a *Activities) Checkout(ctx context.Context, in api.NodeInput) (api.NodeOutput, error) {
	return a.runKind(ctx, specs.Checkout.Name, in)
}

// Grade is the grade kind's activity.
func (a *Activities) Grade(ctx context.Context, in api.NodeInput) (api.NodeOutput, error) {
	return a.runKind(ctx, specs.Grade.Name, in)
}

// Agent is the agent kind's activity: the whole trajectory in one activity (agentStep).
func (a *Activities) Agent(ctx context.Context, in api.NodeInput) (api.NodeOutput, error) {
	return a.runKind(ctx, specs.Agent.Name, in)
}

// Functions maps activity names to their functions, for registration with a worker.
func (a *Activities) Functions() map[string]any {
	fns := map[string]any{
		api.LoadDatasetName:     a.LoadDataset,
		api.LoadPlanName:        a.LoadPlan,
		api.RecordName:          a.Record,
		api.SummarizeName:       a.Summarize,
		api.StoreRowsName:       a.StoreRows,
		api.SummarizeStoredName: a.SummarizeStored,
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
	if a.stores == nil {
		a.stores = map[string]cas.Store{}
	}
	a.stores[run] = s
	return s, nil
}

// Objects returns the store of a run's keyed objects (memos, rankings, caches): its run folder, or with a shared
// store (StoreURL) the run's place in it, so that every worker reads what any wrote.
func (a *Activities) Objects(run string) (objects.Store, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.objects[run]; ok {
		return s, nil
	}
	s, err := bucket.OpenObjects(context.Background(), a.StoreURL, run, a.RunDir(run))
	if err != nil {
		return nil, err
	}
	if err := seesRunMarker(s, run, a.StoreURL); err != nil {
		return nil, err
	}
	if a.objects == nil {
		a.objects = map[string]objects.Store{}
	}
	a.objects[run] = s
	return s, nil
}

// record appends a record to the run's file (runfolder.AttemptsFile, CallsFile): in the run folder on one machine;
// with a shared store, in segments of the run's objects (runlog.Shipper), which the starter gathers into its run
// folder, the worker's own run folder being scratch no other machine reads. A model call's record is the ledger of
// what was paid: it is stored before record returns, so a worker killed with SIGKILL after a call loses none of it
// (one write per call, against a call's seconds); attempt records wait up to runlog.FlushEvery.
func (a *Activities) record(run, file string, v any) error {
	if !bucket.Shared(a.StoreURL) {
		return runlog.Append(filepath.Join(a.RunDir(run), file), v)
	}
	objs, err := a.Objects(run)
	if err != nil {
		return err
	}
	a.mu.Lock()
	sh, ok := a.shippers[run+"\x00"+file]
	if !ok {
		if a.shippers == nil {
			a.shippers = map[string]*runlog.Shipper{}
		}
		sh = runlog.NewShipper(objs, file)
		a.shippers[run+"\x00"+file] = sh
	}
	a.mu.Unlock()
	if err := sh.Append(v); err != nil || file != runfolder.CallsFile {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return sh.Flush(ctx)
}

// Flush stores the records not shipped yet, and goes on shipping.
func (a *Activities) Flush(ctx context.Context) error {
	a.mu.Lock()
	shippers := slices.Collect(maps.Values(a.shippers))
	a.mu.Unlock()
	var errs []error
	for _, sh := range shippers {
		errs = append(errs, sh.Flush(ctx))
	}
	return errors.Join(errs...)
}

// Close stores the records not shipped yet; a worker calls it once its workers have stopped.
func (a *Activities) Close() error {
	a.mu.Lock()
	shippers := a.shippers
	a.shippers = nil
	a.mu.Unlock()
	var errs []error
	for _, sh := range shippers {
		errs = append(errs, sh.Close())
	}
	return errors.Join(errs...)
}

// seesRunMarker checks, with a shared store, that the starter of the run wrote its marker there: a worker that
// joined after the starter's handshake and whose store is not the starter's fails every node it takes, loudly
// (errkind.StoreMismatch, a configuration failure a re-run retries), instead of computing into a store no one reads.
func seesRunMarker(s objects.Store, run, setting string) error {
	if !bucket.Shared(setting) {
		return nil // the run folder: this machine's, or a disk every worker mounts
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.Get(ctx, runfolder.RunMarkerKey)
	if errors.Is(err, objects.ErrNotFound) {
		host, _ := os.Hostname()
		return errkind.Mark(errkind.StoreMismatch, fmt.Errorf("the store %s of this worker (host %s) holds no run "+
			"%q: its starter wrote the run to another store; start this worker with the starter's --store and the "+
			"credentials to reach it", s, host, run))
	}
	return err
}

// cacheObjects is the store of the response cache shared by several experiments (CacheDir: a folder, or a file:// or
// s3:// URL), nil when there is none or it cannot be opened (each run then keeps its own: logged once).
func (a *Activities) cacheObjects() objects.Store {
	a.cacheOnce.Do(func() {
		if a.CacheDir == "" {
			return
		}
		s, err := bucket.OpenObjects(context.Background(), a.CacheDir, "", a.CacheDir)
		if err != nil {
			a.Log.Error().Err(err).Msg("the shared response cache cannot be opened; each run keeps its own")
			return
		}
		a.cache = s
	})
	return a.cache
}

// env is what the step of a node's attempt may use: the run's stores and folder, this process's caches, the
// run's budget and the log, and heartbeats to Temporal.
func (a *Activities) env(ctx context.Context, in api.NodeInput, store cas.Store, objs objects.Store) steps.Env {
	return steps.Env{Node: in, Store: store, Objects: objs, RunDir: a.RunDir(in.Run), Log: a.Log, Text: a.textCache(),
		Rankings: a.rankings(),
		Models: steps.Models{Cache: a.cacheObjects(), NoCache: a.NoCache, Provider: a.newProvider,
			Budget: a.budget(ctx, in)},
		Heartbeat: func() { recordHeartbeat(ctx) }, Executor: a.newExecutor, Turns: agentTurns{a},
		Record: func(file string, v any) error { return a.record(in.Run, file, v) },
		Shipped: func(ctx context.Context, path string) (string, error) {
			return a.shippedPath(ctx, in, store, path)
		}}
}
