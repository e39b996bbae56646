package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	"golang.org/x/mod/modfile"

	"ctxlab/activities"
	"ctxlab/activities/compress"
	"ctxlab/activities/dense"
	"ctxlab/activities/llm"
	"ctxlab/activities/repo"
	"ctxlab/activities/steps"
	"ctxlab/activities/tokens"
	"ctxlab/dataset/swebench"
	"ctxlab/grading"
	"ctxlab/grading/executor"
	"ctxlab/internal/cluster"
	"ctxlab/jsonnet"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/sweepclient"
	"ctxlab/store/bucket"
	"ctxlab/workflows"
)

var checkCommand = commandDef[checkOptions, *checkOptions]{
	use:   "check SPEC",
	short: "check, before anything is paid, that the sweep a spec declares can finish",
	long: "Checks what the sweep SPEC declares needs of this machine and its endpoints, before anything runs: per " +
		"instance, that its repository holds its base_commit and the executor can run its tests (interpreter and " +
		"runner module, Go toolchain and module proxy, Docker engine and image); per model, that the endpoint " +
		"(OPENAI_BASE_URL, OPENAI_API_KEY; for an anthropic model ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) serves its " +
		"id and that its context window, where the server says it, " +
		"holds the prompts; per method, that its embeddings endpoint or compression server answers. Each problem " +
		"names the instance, model or method and the fix; it exits 2 when there is one. starter run runs the same " +
		"checks first (--no-check skips them), starter grade the executor's.",
	run: checkSpec,
}

func init() { commands = append(commands, checkCommand.command()) }

type checkOptions struct {
	spec     string
	runs     string
	cluster  cluster.Options
	store    string
	noWorker bool
	jsonnet.Flags
}

func (o *checkOptions) define(fs *pflag.FlagSet) {
	o.Flags.Register(fs)
	fs.StringVar(&o.runs, "runs", "runs", "folder that holds one output folder per experiment (the demo's "+
		"dataset is generated into it, and repositories cloned by an earlier run are read from it)")
	defineCluster(fs, &o.cluster, "", "default")
	fs.Lookup("address").Usage = "also ask the workers polling this Temporal server at `HOST:PORT` whether they " +
		"share this starter's store, build and queue limits (the handshake starter run makes)"
	fs.StringVar(&o.store, "store", os.Getenv(activities.StoreEnv), "the store the sweep runs with: file:// or "+
		"s3:// `URL`, or a folder ($"+activities.StoreEnv+"); a shared one is probed, and the workers are asked "+
		"whether it is theirs")
	fs.BoolVar(&o.noWorker, "no-worker", false, "check only what starter run --no-worker needs of this machine: "+
		"the rest is the workers' (ask them with --address)")
}

func (o *checkOptions) complete(pos []string, _ *pflag.FlagSet) error {
	var err error
	o.spec, err = oneSpec("check", pos)
	return err
}

// checkTimeout bounds a whole check: each probe has its own, shorter one.
const checkTimeout = 3 * time.Minute

func checkSpec(o checkOptions, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	e, err := compileSpec(o.spec, o.Flags)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	runDir := filepath.Join(o.runs, e.Name)
	rep := &checkReport{}
	instances, err := sweepclient.PrepareDataset(e, runDir)
	if err != nil {
		rep.fail("dataset", "", strings.TrimPrefix(err.Error(), "dataset: "), "name an existing dataset file (the "+
			"spec's dataset, or --ext-str dataset=FILE where the spec reads one)")
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", o.spec, err)
		return exitUsage
	}
	parts := checkAll
	if o.noWorker {
		parts = checkParts{}
	}
	rep.checkSweep(ctx, e, plan, instances, runDir, parts)
	rep.checkWorkers(ctx, o, e, runDir)
	if !rep.print(stdout, stderr, o.spec, true) {
		return exitUsage
	}
	return exitOK
}

// checkWorkers probes the shared store and, with --address, makes starter run's handshake with the workers polling
// the sweep's queues: each that differs (its store, its build, its queue limits) is a problem naming it.
func (r *checkReport) checkWorkers(ctx context.Context, o checkOptions, e *specs.Experiment, runDir string) {
	if err := bucket.Probe(ctx, o.store); err != nil {
		r.fail("store", o.store, err.Error(), "give --store (or $CTXLAB_STORE) a store this machine can write")
		return
	}
	if o.cluster.Address == "" {
		return
	}
	c, err := cluster.Dial(ctx, o.cluster, zerolog.Nop())
	if err != nil {
		r.fail("workers", o.cluster.Address, err.Error(), "start the Temporal server, or name it with --address")
		return
	}
	defer c.Close()
	objs, err := bucket.OpenObjects(ctx, o.store, e.Name, runDir)
	if err == nil && bucket.Shared(o.store) {
		err = sweepclient.WriteRunMarker(ctx, o.store, e.Name, runDir)
	}
	var res sweepclient.HandshakeResult
	if err == nil {
		// The run's budget is not asked: check sets no limits on it, and a running sweep's may differ.
		res, err = sweepclient.Handshake(ctx, c, objs, e.Name, workflows.DefaultQueues, e.Limits.Queues, nil)
	}
	if err != nil {
		r.fail("workers", o.cluster.Address, err.Error(), "check the Temporal server and the store")
		return
	}
	r.checked = append(r.checked, fmt.Sprintf("%d worker process(es) at %s", res.Workers, o.cluster.Address))
	switch {
	case res.Workers == 0:
		r.note("no worker polls the sweep's queues at %s yet: start them before the sweep, or they are checked "+
			"by each of their nodes", o.cluster.Address)
	case len(res.Problems) > 0:
		for _, p := range res.Problems {
			r.fail("workers", o.cluster.Address, p, "start the workers as the starter runs: the same --store, "+
				"build and --spec")
		}
	}
	for _, w := range res.Silent {
		r.note("a worker Temporal saw polling at %s did not answer the handshake: %s", o.cluster.Address, w)
	}
}

// checkBeforeRun runs a sweep's checks at the start of starter run, writing the notes and problems to w; it reports
// whether there was no problem.
func checkBeforeRun(ctx context.Context, e *specs.Experiment, plan *specs.Plan, instances []swebench.Instance,
	runDir string, parts checkParts, spec string, w io.Writer) bool {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	rep := &checkReport{}
	rep.checkSweep(ctx, e, plan, instances, runDir, parts)
	return rep.print(w, w, spec, false)
}

// checkGraders runs the executor's checks of the instances starter grade grades, as checkBeforeRun does.
func checkGraders(ctx context.Context, ds specs.Dataset, g specs.Grading, instances []swebench.Instance,
	reposDir, what string, w io.Writer) bool {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	rep := &checkReport{}
	rep.checkInstances(ctx, ds, []specs.Grading{g}, instances, reposDir, checkParts{graders: true})
	return rep.print(w, w, what, false)
}

// checkParts selects what a check covers: the instances' repositories, their graders (when this machine grades)
// and the endpoints.
type checkParts struct{ repos, graders, endpoints bool }

var checkAll = checkParts{repos: true, graders: true, endpoints: true}

// checkProblem is one thing that keeps a sweep from finishing: what it concerns (a kind: instance, model, method,
// dataset; and a name), the problem and its fix.
type checkProblem struct {
	kind, name, problem, fix string
}

// checkReport collects a check's problems and notes (what it could not check, what may go wrong).
type checkReport struct {
	problems []checkProblem
	notes    []string
	checked  []string
}

func (r *checkReport) fail(kind, name, problem, fix string) {
	r.problems = append(r.problems, checkProblem{kind: kind, name: name, problem: problem, fix: fix})
}

func (r *checkReport) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// print writes the report: the notes and, when there is no problem and ready is set (starter check), what was
// checked to out; the problems to errs (one line per problem, the subjects it concerns grouped). It reports whether
// there was no problem.
func (r *checkReport) print(out, errs io.Writer, spec string, ready bool) bool {
	for _, n := range r.notes {
		fmt.Fprintln(out, "starter check: note:", n)
	}
	if len(r.problems) == 0 {
		if ready {
			fmt.Fprintf(out, "starter check: %s: ready (%s)\n", spec, strings.Join(r.checked, "; "))
		}
		return true
	}
	type group struct {
		kind, problem, fix string
		names              []string
	}
	var groups []*group
	for _, p := range r.problems {
		i := slices.IndexFunc(groups, func(g *group) bool {
			return g.kind == p.kind && g.problem == p.problem && g.fix == p.fix
		})
		if i < 0 {
			groups = append(groups, &group{kind: p.kind, problem: p.problem, fix: p.fix})
			i = len(groups) - 1
		}
		if p.name != "" {
			groups[i].names = append(groups[i].names, p.name)
		}
	}
	fmt.Fprintf(errs, "starter check: %s: %d problem(s); nothing was run or paid:\n", spec, len(groups))
	for _, g := range groups {
		subject := g.kind
		if len(g.names) > 1 {
			subject += "s"
		}
		if len(g.names) > 0 {
			subject += " " + listSome(g.names, 10)
		}
		line := "  " + subject + ": " + g.problem
		if g.fix != "" {
			line += "; fix: " + g.fix
		}
		fmt.Fprintln(errs, line)
	}
	fmt.Fprintln(errs, "starter check: fix these and run again (starter run --no-check skips the checks)")
	return false
}

// checkSweep runs the checks of a sweep: its instances' repositories and graders, its models' endpoints and context
// windows, its methods' services.
func (r *checkReport) checkSweep(ctx context.Context, e *specs.Experiment, plan *specs.Plan,
	instances []swebench.Instance, runDir string, parts checkParts) {
	if parts == (checkParts{}) {
		r.note("this starter runs no worker (--no-worker): the repositories, graders, endpoints and services the " +
			"sweep needs are the workers', on their machines and with their environment, and are not checked here; " +
			"run starter check SPEC where a worker runs, with its environment")
		return
	}
	needs := planNeedsOf(e, plan)
	r.checkInstances(ctx, e.Dataset, needs.gradings, instances, runfolder.Repos(runDir), parts)
	if parts.endpoints {
		r.checkModels(ctx, e, needs, instances)
		r.checkTokenizers(ctx, e)
		r.checkServices(ctx, needs)
	}
}

// planNeeds is what a plan's nodes ask of the machine and the endpoints.
type planNeeds struct {
	// gradings are the distinct grading sections of the grade steps.
	gradings []specs.Grading
	// methodsOf lists, per model name, the methods whose steps call it.
	methodsOf map[string][]string
	// embeddings lists the methods per embedding model of dense retrieval; compressors per compressor and endpoint.
	embeddings  map[string][]string
	compressors map[[2]string][]string
	// largest is the largest total cap of an assembled context (tokens of the spec's tokenizer) and the method
	// whose step sets it: a bound on the prompts, for the note on context windows.
	largest       int
	largestMethod string
}

func planNeedsOf(e *specs.Experiment, plan *specs.Plan) planNeeds {
	n := planNeeds{methodsOf: map[string][]string{}, embeddings: map[string][]string{},
		compressors: map[[2]string][]string{}}
	nodes := map[string]specs.Node{}
	for _, nd := range plan.Nodes {
		nodes[nd.Key] = nd
	}
	add := func(list []string, m string) []string {
		if !slices.Contains(list, m) {
			list = append(list, m)
		}
		return list
	}
	for _, arm := range plan.Arms {
		for _, st := range arm.Steps {
			nd := nodes[st.Key]
			info := specs.Catalog[nd.Activity]
			if info.UsesModel {
				n.methodsOf[arm.Model] = add(n.methodsOf[arm.Model], arm.Method)
			}
			if info.UsesGrading {
				var g struct {
					Grading specs.Grading `json:"grading"`
				}
				if decodeParams(nd.Params, &g) == nil && !slices.ContainsFunc(n.gradings, func(h specs.Grading) bool {
					a, _ := json.Marshal(h)
					b, _ := json.Marshal(g.Grading)
					return string(a) == string(b)
				}) {
					n.gradings = append(n.gradings, g.Grading)
				}
			}
			switch nd.Activity {
			case "retrieve":
				var p specs.RetrieveParams
				if decodeParams(nd.Params, &p) == nil && p.Scorer == specs.ScorerDense {
					n.embeddings[p.EmbeddingModel] = add(n.embeddings[p.EmbeddingModel], arm.Method)
				}
			case "compress":
				var p specs.CompressParams
				if decodeParams(nd.Params, &p) == nil && p.Compressor != specs.CompressorFake && p.Endpoint != "builtin" {
					k := [2]string{string(p.Compressor), p.Endpoint}
					n.compressors[k] = add(n.compressors[k], arm.Method)
				}
			case "assemble":
				var p specs.AssembleParams
				if decodeParams(nd.Params, &p) == nil && p.TotalCap > n.largest {
					n.largest, n.largestMethod = p.TotalCap, arm.Method
				}
			}
		}
	}
	return n
}

func decodeParams(params map[string]any, v any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// checkInstances checks each instance's repository (it opens, it holds base_commit: parts.repos) and that this
// machine can grade it under every grading section of the plan (parts.graders). An instance whose repository
// cannot be read is not probed further: its row fails at the checkout, whether that is checked or not.
func (r *checkReport) checkInstances(ctx context.Context, ds specs.Dataset, gradings []specs.Grading,
	instances []swebench.Instance, reposDir string, parts checkParts) {
	if len(instances) == 0 {
		return
	}
	needs := r.instanceNeeds(ds, instances, reposDir, parts)
	if !parts.graders {
		return
	}
	datasetDir, _ := filepath.Abs(filepath.Dir(ds.File))
	for _, g := range gradings {
		cfg := grading.ExecutorConfig(g)
		cfg.GoProxy = strings.ReplaceAll(cfg.GoProxy, "{dataset_dir}", datasetDir)
		cfg.PythonWheels = strings.ReplaceAll(cfg.PythonWheels, "{dataset_dir}", datasetDir)
		switch g.Executor {
		case "docker":
			images, err := executor.ProbeDocker(ctx, cfg)
			if err != nil {
				r.fail("grading", "", err.Error(), "")
				continue
			}
			r.checkImages(cfg, instances, images)
			r.checked = append(r.checked, "docker engine and images")
		default:
			r.probeLocalRunners(ctx, cfg, instances, needs)
			r.checked = append(r.checked, "local test runners")
		}
	}
}

// instanceNeeds is what each instance's tests need (its language and requirements, from its cloned repository;
// empty when unknown), noting the instances not cloned yet and counting the instances by language.
func (r *checkReport) instanceNeeds(ds specs.Dataset, instances []swebench.Instance, reposDir string,
	parts checkParts) []executor.Needs {
	opened := map[string]*git.Repository{}
	var needs []executor.Needs
	langs := map[string]int{}
	notCloned := 0
	for _, in := range instances {
		n, err := instanceNeeds(in, ds, reposDir, opened)
		if err != nil {
			if parts.repos {
				r.fail("instance", in.InstanceID, err.Error(), "")
			}
			needs = append(needs, executor.Needs{}) // not probed
			continue
		}
		if n.Lang == "" {
			if _, _, ok := executor.InstanceSpec(in); ok {
				n.Lang = executor.LangPython // the harness's table and SWE-rebench's install_config are Python's
			} else {
				notCloned++
			}
		}
		langs[n.Lang]++
		needs = append(needs, n)
	}
	if notCloned > 0 {
		r.note("%d instance(s) have repositories this machine has not cloned yet: their languages (and so their "+
			"test runners) are checked when a run has cloned them", notCloned)
	}
	var counts []string
	for _, l := range []string{executor.LangGo, executor.LangPython} {
		if langs[l] > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", langs[l], l))
		}
	}
	r.checked = append(r.checked, fmt.Sprintf("%d instances (%s)", len(instances), strings.Join(counts, ", ")))
	return needs
}

// probeLocalRunners checks that the local executor can run each instance's tests (needs[i] is instances[i]'s; one
// with no language was not probed), one probe per distinct need: importing pytest or reaching a proxy once is
// enough.
func (r *checkReport) probeLocalRunners(ctx context.Context, cfg executor.Config, instances []swebench.Instance,
	needs []executor.Needs) {
	done := map[executor.Needs]error{}
	for i, in := range instances {
		n := needs[i]
		if n.Lang == "" {
			continue
		}
		key := executor.Needs{Lang: n.Lang, Requires: n.Requires}
		if cfg.TestCmdFor(n.Repo, n.Lang) != cfg.TestCmdFor("", n.Lang) {
			key.Repo = n.Repo // a command of the repository's own
		}
		err, ok := done[key]
		if !ok {
			err = executor.ProbeLocal(ctx, cfg, n)
			done[key] = err
		}
		if err != nil {
			r.fail("instance", in.InstanceID, "its "+n.Lang+" tests cannot run here", err.Error())
		}
	}
}

// checkImages names the instances whose images the engine does not hold. Their images differ, so a fix naming
// each would put one line per instance: one missing image is named with its docker pull; several are one problem,
// the instances grouped, the fix naming the first image (the others follow the same pattern, or the rows' own).
func (r *checkReport) checkImages(cfg executor.Config, instances []swebench.Instance, images map[string]bool) {
	var missing []swebench.Instance
	var first error
	for _, in := range instances {
		if err := executor.ProbeImage(cfg, in, images); err != nil {
			missing = append(missing, in)
			if first == nil {
				first = err
			}
		}
	}
	switch {
	case len(missing) == 1:
		r.fail("instance", missing[0].InstanceID, "not gradable", first.Error())
	case len(missing) > 1:
		fix := fmt.Sprintf("starter images pull --spec SPEC (or --dataset FILE) pulls each instance's image (%s's "+
			"is %s), or for a dataset that publishes no images starter images build --spec SPEC (or --dataset FILE)",
			missing[0].InstanceID, executor.ImageOf(cfg.Namespace, missing[0]))
		for _, in := range missing {
			r.fail("instance", in.InstanceID, "not gradable: its image is not on this machine", fix)
		}
	}
}

// instanceNeeds reads what grading an instance needs from its repository at base_commit: Go when the tree has a
// go.mod (as the grader decides), with requirements to download when its go.sum is not empty. A repository named
// by URL is not cloned for a check: a clone an earlier run made is read, else the language stays unknown.
func instanceNeeds(in swebench.Instance, ds specs.Dataset, reposDir string,
	opened map[string]*git.Repository) (executor.Needs, error) {
	n := executor.Needs{Repo: in.Repo}
	src, err := repo.SourceFor(ds.Repos, in, filepath.Dir(ds.File))
	if err != nil {
		return n, err
	}
	dir := src
	if !isDir(dir) {
		if !strings.Contains(src, "://") && !strings.HasPrefix(src, "git@") {
			return n, fmt.Errorf("repository folder %s does not exist: fix the dataset's repos template or make "+
				"the folder", src)
		}
		if dir = filepath.Join(reposDir, repo.CacheName(src)); !isDir(dir) {
			return n, nil
		}
	}
	r, ok := opened[dir]
	if !ok {
		var err error
		if r, err = git.PlainOpen(dir); err != nil {
			return n, fmt.Errorf("repository %s cannot be opened: %v", src, err)
		}
		opened[dir] = r
	}
	_, isGo, err := repo.FileAt(r, in.BaseCommit, "go.mod")
	if errors.Is(err, repo.ErrCommitNotFound) {
		return n, fmt.Errorf("base_commit %s is not in %s: fetch it (a shallow or stale clone), or fix the "+
			"dataset row", in.BaseCommit, src)
	}
	if err != nil {
		return n, err
	}
	n.Lang = executor.LangPython
	if isGo {
		n.Lang = executor.LangGo
		sum, _, err := repo.FileAt(r, in.BaseCommit, "go.sum")
		if err != nil {
			return n, err
		}
		// An older module comes without go.sum: its go.mod's requirements are downloaded all the same.
		goMod, _, err := repo.FileAt(r, in.BaseCommit, "go.mod")
		if err != nil {
			return n, err
		}
		mf, _ := modfile.ParseLax("go.mod", goMod, nil)
		n.Requires = len(strings.TrimSpace(string(sum))) > 0 || (mf != nil && len(mf.Require) > 0)
	}
	return n, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// probeTimeout bounds one request of a check.
const probeTimeout = 15 * time.Second

// checkModels checks every model a plan calls, as its provider's check does (llm.Implementation.Check): for an
// endpoint, that it serves the model's id (GET /v1/models), and where the server says its context window (llama.cpp's
// /props, vLLM's max_model_len), that the window holds the model's max_tokens and each instance's smallest prompt
// (its issue text, which every prompt shows).
func (r *checkReport) checkModels(ctx context.Context, e *specs.Experiment, needs planNeeds,
	instances []swebench.Instance) {
	for _, m := range e.Models {
		impl, ok := llm.Implemented(m.Provider)
		if !ok || impl.Check == nil || len(needs.methodsOf[m.Name]) == 0 {
			continue
		}
		c := impl.Check(ctx, m, probeTimeout)
		if c.Note != "" {
			r.note("model %s: %s", m.Name, c.Note)
		}
		if c.Problem != "" {
			r.fail("model", m.Name, c.Problem, c.Fix)
		}
		if !c.Served {
			continue
		}
		r.checked = append(r.checked, fmt.Sprintf("model %s served by %s", m.Name, c.Host))
		if c.Window.Tokens > 0 {
			r.checkWindow(m, c.Window, c.Count, specs.ResolveTokenizer(e, m), needs, instances)
		}
	}
}

// checkWindow holds a context window against each instance's issue text, which every prompt shows, and the
// model's max_tokens. A server that refuses up front a request whose prompt and max_tokens exceed the window (vLLM,
// OpenAI) fails every call of an instance whose issue leaves no room for max_tokens; llama.cpp stops an answer at
// the window's end (and the calls ask for no more than it leaves), so there only the issue itself must fit, and a
// max_tokens beyond the window is a note. The plan's
// largest context beyond the window is a note too: only some prompts reach it, and their rows are context_length
// rows.
func (r *checkReport) checkWindow(m specs.Model, w llm.Window, serverCount func(string) (int, error), tokenizer string,
	needs planNeeds, instances []swebench.Instance) {
	window, source, llama := w.Tokens, w.Where(), w.LlamaCpp()
	if llama {
		if w.Slots > 1 {
			r.note("model %s: the server serves %d requests at once, each with a context of %d tokens, all sharing "+
				"one cache of a size it does not report (llama-server -c): calls that together need more than it "+
				"holds fail with HTTP 500 \"Context size has been exceeded.\" and are asked again with fewer beside "+
				"them (context_capacity); llama-server -c %d holds them all", m.Name, w.Slots, window, w.Slots*window)
		}
	}
	room := m.MaxTokens
	if llama {
		room = 0
		if m.MaxTokens >= window {
			r.note("model %s: max_tokens %d is beyond its %d-token context (%s): each call asks for what the "+
				"context leaves beside its prompt", m.Name, m.MaxTokens, window, source)
		}
	} else if m.MaxTokens >= window {
		r.fail("model", m.Name, fmt.Sprintf("max_tokens %d leaves no room for a prompt in its %d-token context "+
			"(%s)", m.MaxTokens, window, source), "lower the model's max_tokens, or serve a larger context")
		return
	}
	unit, count := tokenizer+" tokens", func(text string) (int, error) { return tokens.Count(tokenizer, text) }
	if serverCount != nil {
		unit, count = "tokens of the server's tokenizer", serverCount
	}
	var tooLong []string
	for _, in := range instances {
		n, err := count(in.ProblemStatement)
		if err != nil {
			r.note("model %s: could not count the tokens of %s's issue: %v", m.Name, in.InstanceID, err)
			break
		}
		if n+room > window {
			tooLong = append(tooLong, fmt.Sprintf("%s (%d)", in.InstanceID, n))
		}
	}
	if len(tooLong) > 0 {
		with := ""
		if room > 0 {
			with = fmt.Sprintf(" beside max_tokens %d", room)
		}
		r.fail("model", m.Name, fmt.Sprintf("the issue text alone (%s), which every prompt shows, does not fit its "+
			"%d-token context%s (%s) for %s", unit, window, with, source, listSome(tooLong, 10)),
			"serve a larger context, or leave those instances out of the dataset")
	}
	if needs.largest > window {
		r.note("model %s: its context holds %d tokens (%s); contexts of up to %d %s tokens (%s's assemble total_cap) "+
			"may not fit, and the rows of prompts that do not are context_length rows", m.Name, window, source,
			needs.largest, tokenizer, needs.largestMethod)
	}
}

// errorMessage is an error's text without the "model call failed" frame of *llm.Error.
func errorMessage(err error) string {
	var le *llm.Error
	if errors.As(err, &le) {
		if le.Status != 0 {
			return fmt.Sprintf("HTTP %d: %s", le.Status, le.Msg)
		}
		return le.Msg
	}
	return err.Error()
}

// checkServices checks the services methods call besides the model: an embeddings endpoint for dense retrieval (one
// embedding of two words per embedding model), a compression server per compressor (one compression of a line).
func (r *checkReport) checkServices(ctx context.Context, needs planNeeds) {
	for _, model := range slices.Sorted(maps.Keys(needs.embeddings)) {
		methods := needs.embeddings[model]
		c, err := dense.NewFromEnv(model, &memVectors{})
		if err == nil {
			ctx, cancel := context.WithTimeout(ctx, probeTimeout)
			_, _, err = c.Embed(ctx, []string{"ctxlab check"})
			cancel()
		}
		if err != nil {
			for _, m := range methods {
				r.fail("method", m, fmt.Sprintf("no embeddings of model %q from the endpoint (%s): %s", model,
					specs.OpenAI.Env.BaseURL, errorMessage(err)), "serve embeddings there (llama-server --embeddings, "+
					"vLLM --task embed), or leave the dense methods out")
			}
			continue
		}
		r.checked = append(r.checked, "embeddings of "+model)
	}
	compressors := slices.SortedFunc(maps.Keys(needs.compressors), func(a, b [2]string) int {
		return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1])
	})
	for _, k := range compressors {
		methods := needs.compressors[k]
		endpoint := k[1]
		if endpoint == "" {
			endpoint = os.Getenv(steps.CompressEndpointEnv)
		}
		var err error
		if endpoint == "" {
			err = fmt.Errorf("compressor %s needs a compression server, and neither %s nor the step's endpoint names "+
				"one", k[0], steps.CompressEndpointEnv)
		} else {
			cctx, cancel := context.WithTimeout(ctx, probeTimeout)
			_, err = compress.NewClient(endpoint).Compress(cctx, compress.Request{Compressor: k[0],
				Text: "ctxlab checks that the compression server answers.", Rate: 0.5})
			cancel()
		}
		if err != nil {
			for _, m := range methods {
				r.fail("method", m, err.Error(), "start scripts/compress_server.py and set "+
					steps.CompressEndpointEnv+", or leave the compressor's methods out")
			}
			continue
		}
		r.checked = append(r.checked, "compressor "+k[0])
	}
}

// memVectors is a dense.Cache that keeps nothing: a check's one embedding is not worth storing.
type memVectors struct{}

func (*memVectors) Get(string) ([]float32, bool) { return nil, false }
func (*memVectors) Put(string, []float32) error  { return nil }
