package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/temporal"

	"ctxlab/activities"
	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/dataset/swebench"
	"ctxlab/grading"
	"ctxlab/internal/images"
	"ctxlab/internal/logs"
	"ctxlab/patch/diff"
	"ctxlab/results"
	"ctxlab/results/predictions"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

var gradeCommand = commandDef[gradeOptions, *gradeOptions]{
	use:   "grade --dataset FILE --predictions FILE|gold|empty",
	short: "grade SWE-bench predictions with ctxlab's grader",
	long: "Grades each prediction's patch by running its instance's tests (no server needed) into runs/NAME; " +
		"gold and empty validate the dataset.",
	run: gradePredictions,
}

func init() { commands = append(commands, gradeCommand.command()) }

type gradeOptions struct {
	dataset, predictions string
	runs, name, repos    string
	concurrency          int
	quiet                bool
	grading              specs.Grading
	// timeout is --timeout, moved into grading by complete.
	timeout time.Duration
	// ignoreUnknown grades the predictions of the dataset's instances and skips the others, instead of stopping.
	ignoreUnknown bool
	// noCheck skips the check that this machine can run the instances' tests (check.go).
	noCheck bool
	// pull says whether the docker executor's missing images are pulled first: pullMissingImages or pullNever.
	pull string
	// pullConcurrency is how many images are pulled at once.
	pullConcurrency int
}

// The values of --pull.
const (
	pullMissingImages = "missing"
	pullNever         = "never"
)

func (o *gradeOptions) define(fs *pflag.FlagSet) {
	fs.StringVar(&o.dataset, "dataset", "", "dataset `FILE` holding the predicted instances: JSONL, JSON list, parquet or a folder of parquet shards; SWE-bench or Multi-SWE-bench rows")
	fs.StringVar(&o.predictions, "predictions", "", "predictions `FILE` (JSONL, JSON list or map: instance_id, model_name_or_path, model_patch; or Multi-SWE-bench's org, repo, number, fix_patch), "+
		"or gold (the dataset's own patches) or empty (no patch) to validate the dataset: exit 1 when some gold patch does not resolve, or some empty one does")
	fs.StringVar(&o.runs, "runs", "runs", "folder that holds one output folder per run")
	fs.StringVar(&o.name, "name", "", "run name (default: grade-<predictions file name>)")
	fs.StringVar(&o.repos, "repos", specs.DefaultRepos, "each instance's repository: a folder or git URL `TEMPLATE` ({repo}, {owner}, {name}, {dataset_dir})")
	fs.IntVar(&o.concurrency, "concurrency", 2, "instances graded at once")
	fs.BoolVar(&o.quiet, "quiet", false, "print only the summary")
	fs.BoolVar(&o.ignoreUnknown, "ignore-unknown", false, "grade the predictions of the dataset's instances and skip those naming other instances (default: list them and stop)")
	fs.BoolVar(&o.noCheck, "no-check", false, "skip the check, before grading, that this machine can run every "+
		"instance's tests (starter check's executor part)")
	fs.DurationVar(&o.timeout, "timeout", specs.DefaultTimeout, "timeout of each instance's test run")
	fs.StringVar(&o.pull, "pull", pullMissingImages, "docker: pull the instance images the engine lacks before grading (missing), or not (never)")
	fs.IntVar(&o.pullConcurrency, "pull-concurrency", 4, "docker: images pulled at once")
	fs.StringVar(&o.grading.Executor, "executor", specs.DefaultExecutor, "local or docker")
	fs.IntVar(&o.grading.Reruns, "reruns", 0, "re-run a failing grade up to N times (flake guard)")
	fs.StringVar(&o.grading.Namespace, "namespace", "", "docker: image namespace (default swebench)")
	fs.Var(goFlagValue{&o.grading.TestCmd, "COMMAND"}, "test-cmd", "test `COMMAND` replacing the default (test files are appended), or a JSON object of commands by language and repository, as grading.test_cmd")
	fs.StringVar(&o.grading.LogParser, "log-parser", "", "gotest, pytest or unittest (default: from the command)")
	fs.StringVar(&o.grading.GoProxy, "goproxy", "", "GOPROXY for downloading Go modules before the tests run offline (`URL`; {dataset_dir} is the dataset's folder; default: the worker's)")
	fs.Var(installConfigFlag{&o.grading.InstallConfig}, "install-config", "the Python environment of every instance whose row states none: a JSON `OBJECT` in SWE-rebench's install_config form, as grading.install_config")
	fs.StringVar(&o.grading.PythonWheels, "python-wheels", "", "folder of wheels (or package index `URL`) the local executor installs a stated environment's missing packages from, offline ({dataset_dir} is the dataset's folder)")
	fs.StringVar(&o.grading.Tests, "tests", "", "Python tests to run: files (the test patch's files, as the harness) or listed (exactly FAIL_TO_PASS and PASS_TO_PASS)")
	fs.StringVar(&o.grading.Isolation, "isolation", "", "sandbox (default: the tests run as a dedicated uid in their own namespaces, when root on Linux) or none")
	fs.StringVar(&o.grading.ModelTests, "model-tests", "", "the model patch's test files: drop (default; reset before the tests run) or keep")
}

func (o *gradeOptions) complete(pos []string, _ *pflag.FlagSet) error {
	if len(pos) > 0 {
		return fmt.Errorf("grade: unexpected arguments %v", pos)
	}
	if o.dataset == "" || o.predictions == "" {
		return errors.New("grade: --dataset and --predictions are required")
	}
	if o.concurrency < 1 {
		return fmt.Errorf("grade: --concurrency %d must be at least 1", o.concurrency)
	}
	if !validExecutor(o.grading.Executor) {
		return fmt.Errorf("grade: unknown executor %q (known: %s)", o.grading.Executor, strings.Join(specs.Executors, ", "))
	}
	if g := o.grading; g.ModelTests != "" && !slices.Contains(specs.ModelTests, g.ModelTests) {
		return fmt.Errorf("grade: unknown --model-tests %q (known: %s)", g.ModelTests, strings.Join(specs.ModelTests, ", "))
	}
	if g := o.grading; g.Isolation != "" && !slices.Contains(specs.Isolations, g.Isolation) {
		return fmt.Errorf("grade: unknown --isolation %q (known: %s)", g.Isolation, strings.Join(specs.Isolations, ", "))
	}
	if o.pull != pullMissingImages && o.pull != pullNever {
		return fmt.Errorf("grade: unknown --pull %q (known: %s, %s)", o.pull, pullMissingImages, pullNever)
	}
	if o.pullConcurrency < 1 {
		return fmt.Errorf("grade: --pull-concurrency %d must be at least 1", o.pullConcurrency)
	}
	if g := o.grading; g.Tests != "" && !slices.Contains(specs.TestModes, g.Tests) {
		return fmt.Errorf("grade: unknown --tests %q (known: %s)", g.Tests, strings.Join(specs.TestModes, ", "))
	}
	o.grading.Timeout = specs.Duration(o.timeout)
	if o.name == "" {
		base := filepath.Base(o.predictions)
		o.name = "grade-" + strings.TrimSuffix(base, filepath.Ext(base))
	}
	return nil
}

func parseGrade(args []string, stderr io.Writer) (gradeOptions, error) {
	return gradeCommand.parse(args, stderr)
}

func validExecutor(e string) bool { return slices.Contains(specs.Executors, e) }

// gradePredictions grades a predictions file with the grade activity's own code (activities.Checkout and
// activities.Grade called as plain functions), without Temporal: each prediction is a grade plan of two nodes
// (specs.GradePlan) with no model calls, so it needs no server, and it runs where no server can. Node outputs are
// memoized in the run folder as in a sweep, so a killed grade run picks up where it stopped when started again.
func gradePredictions(o gradeOptions, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := gradeRun(ctx, o, stdout, stderr)
	return exitCodeSaying(code, err, stderr)
}

// exitCodeSaying is code, or the code of a roundExit err after printing its lines on stderr.
func exitCodeSaying(code int, err error, stderr io.Writer) int {
	var x *roundExit
	if !errors.As(err, &x) {
		return code
	}
	for _, line := range x.lines {
		fmt.Fprintln(stderr, line)
	}
	return x.code
}

// gradeRun reads the dataset and the predictions, checks this machine can grade them, grades them, replaces their
// rows in the run folder and says how they graded; a roundExit says why it stopped early.
func gradeRun(ctx context.Context, o gradeOptions, stdout, stderr io.Writer) (int, error) {
	datasetFile, err := filepath.Abs(o.dataset)
	if err != nil {
		return 0, starterFailed(exitUsage, err)
	}
	byID, preds, err := readGradeInputs(o, datasetFile, stderr)
	if err != nil {
		return 0, err
	}
	runDir := filepath.Join(o.runs, o.name)
	dataset := specs.Dataset{File: datasetFile, Repos: o.repos}
	if o.grading.Executor == "docker" && o.pull == pullMissingImages {
		b := images.Builder{Docker: o.grading.Docker, Log: stderr}
		if err := pullMissing(ctx, b, o.grading.Namespace, gradedInstances(preds, byID), o.pullConcurrency,
			stderr); err != nil {
			return 0, exitWith(exitFail, "starter: "+err.Error()+"\nstarter: nothing graded")
		}
	}
	if !o.noCheck && !checkGraders(ctx, dataset, o.grading, gradedInstances(preds, byID), runfolder.Repos(runDir),
		o.dataset, stderr) {
		return 0, exitWith(exitUsage)
	}
	level := zerolog.InfoLevel
	if o.quiet {
		level = zerolog.WarnLevel
	}
	log, closeLog, err := logs.New(logs.Options{Console: stderr, ConsoleLevel: level, File: runfolder.Log(runDir)})
	if err != nil {
		return 0, starterFailed(exitFail, err)
	}
	defer closeLog()
	acts := activities.New(o.runs, log)
	store, err := acts.Store(o.name)
	if err != nil {
		return 0, starterFailed(exitFail, err)
	}
	g := grader{acts: acts, store: store, run: o.name, grading: o.grading, dataset: dataset}
	log.Info().Int("predictions", len(preds)).Str("executor", o.grading.Executor).Str("run", runDir).Msg("grading")
	done := g.gradeAll(ctx, byID, preds, o.concurrency, log)
	if ctx.Err() != nil {
		return 0, exitWith(exitFail, "starter: interrupted; graded instances are kept and skipped when run again")
	}
	out := make([]results.Row, len(done))
	for i, d := range done {
		out[i] = d.Row
	}
	if err := replaceRows(runfolder.Rows(runDir), out); err != nil {
		return 0, starterFailed(exitFail, err)
	}
	instances := slices.SortedFunc(maps.Values(byID), func(a, b swebench.Instance) int {
		return strings.Compare(a.InstanceID, b.InstanceID)
	})
	run := grading.HarnessRun{ID: o.name, Dataset: o.dataset, Predictions: o.predictions,
		Executor: o.grading.Executor, Timeout: o.grading.Timeout.D()}
	if err := grading.WriteHarnessOutput(ctx, store, runDir, run, instances, preds, done); err != nil {
		return 0, starterFailed(exitFail, fmt.Errorf("writing the SWE-bench harness's logs and run report: %w", err))
	}
	summary, err := acts.Summarize(ctx, api.SummarizeInput{Run: o.name, Title: "ctxlab grade: " + o.name})
	if err != nil {
		return 0, starterFailed(exitFail, err)
	}
	fmt.Fprint(stdout, summary)
	return printGradeOutcome(o, runDir, out, stdout, stderr), nil
}

// readGradeInputs reads the dataset (by instance id) and the predictions of its instances: those naming other
// instances stop the run, or with --ignore-unknown are skipped, saying so.
func readGradeInputs(o gradeOptions, datasetFile string, stderr io.Writer) (map[string]swebench.Instance,
	[]predictions.Prediction, error) {
	rows, err := swebench.ReadFile(datasetFile)
	if err != nil {
		return nil, nil, exitWith(exitUsage, err.Error())
	}
	var preds []predictions.Prediction
	if isValidation(o.predictions) {
		preds = datasetPredictions(rows, o.predictions)
	} else if preds, err = predictions.ReadFile(o.predictions); err != nil {
		return nil, nil, exitWith(exitUsage, err.Error())
	}
	byID := map[string]swebench.Instance{}
	for _, r := range rows {
		byID[r.InstanceID] = r
	}
	all := len(preds)
	preds, unknown := splitUnknown(preds, byID)
	if len(unknown) > 0 {
		if !o.ignoreUnknown {
			return nil, nil, exitWith(exitUsage, fmt.Sprintf("%s: %d prediction(s) name instances that are not in "+
				"%s: %s\nstarter: nothing graded; --ignore-unknown grades the %d other prediction(s)",
				o.predictions, all-len(preds), o.dataset, listSome(unknown, maxListed), len(preds)))
		}
		fmt.Fprintf(stderr, "starter: ignored %d prediction(s) naming instances that are not in %s: %s\n",
			all-len(preds), o.dataset, listSome(unknown, maxListed))
	}
	if len(preds) == 0 {
		return nil, nil, exitWith(exitUsage, fmt.Sprintf("starter: nothing to grade: no prediction in %s names an "+
			"instance of %s", o.predictions, o.dataset))
	}
	return byID, preds, nil
}

// gradedInstances are the instances the predictions name, each once, in the predictions' order.
func gradedInstances(preds []predictions.Prediction, byID map[string]swebench.Instance) []swebench.Instance {
	var graded []swebench.Instance
	for _, p := range preds {
		if in := byID[p.InstanceID]; !slices.ContainsFunc(graded, func(g swebench.Instance) bool {
			return g.InstanceID == in.InstanceID
		}) {
			graded = append(graded, in)
		}
	}
	return graded
}

// gradeAll grades the predictions, concurrency at once, logging each, and returns their rows and logs in their
// order.
func (g grader) gradeAll(ctx context.Context, byID map[string]swebench.Instance, preds []predictions.Prediction,
	concurrency int, log zerolog.Logger) []grading.Graded {
	out := make([]grading.Graded, len(preds))
	var wg sync.WaitGroup
	sem := make(chan struct{}, concurrency)
	for i, p := range preds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			out[i] = g.grade(ctx, byID[p.InstanceID], p)
			row := out[i].Row
			ev := log.Info().Str("instance", p.InstanceID).Str("model", p.ModelNameOrPath)
			// A row that failed before grading has no grade_status: it says its error's kind instead of null.
			if status := row.String(specs.GradeStatus.Name); status != "" {
				ev = ev.Str("status", status)
			}
			if row.String(results.FieldError) != "" {
				ev = ev.Str("error", grading.Explanation(row))
			}
			ev.Int64("took_ms", time.Since(start).Milliseconds()).Msg("graded")
		}()
	}
	wg.Wait()
	return out
}

// replaceRows appends rows to the rows file at path in place of those an earlier run wrote for the same keys: the
// dataset or the grading settings may have changed since (every row was graded again, or taken from a memo of the
// same inputs).
func replaceRows(path string, rows []results.Row) error {
	keys := map[results.Key]bool{}
	for _, r := range rows {
		keys[r.Key()] = true
	}
	store := results.Store{Path: path}
	if _, err := store.Remove(func(r results.Row) bool { return keys[r.Key()] }); err != nil {
		return err
	}
	_, err := store.Append(rows)
	return err
}

// printGradeOutcome says, below the summary, how many rows were graded, where they are and, for gold or empty, how
// the dataset validates; it returns the exit code (exitFail when a row errored or the dataset does not validate).
func printGradeOutcome(o gradeOptions, runDir string, out []results.Row, stdout, stderr io.Writer) int {
	failed := printGradedAndErrored(stdout, out)
	fmt.Fprintf(stdout, "\nresults: %s\nsummary: %s\n", runfolder.Rows(runDir), runfolder.Summary(runDir))
	code := exitOK
	if isValidation(o.predictions) && reportValidation(o.predictions, out, stdout) > 0 {
		code = exitFail
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "starter: %d instance(s) could not be graded (see the error field of their rows)\n", failed)
		code = exitFail
	}
	return code
}

// printGradedAndErrored says, below the summary table, how many rows were graded and how many errored before a
// test verdict: the table's resolved and applied rates count an errored row as neither, which alone reads as a
// patch that did not apply. It returns the errored rows' count.
func printGradedAndErrored(stdout io.Writer, rows []results.Row) int {
	var errored []string
	for _, r := range rows {
		if r.String(results.FieldError) != "" {
			errored = append(errored, r.String(results.FieldInstance))
		}
	}
	fmt.Fprintf(stdout, "\ngraded: %d of %d predictions; errored: %d", len(rows)-len(errored), len(rows), len(errored))
	if len(errored) == 0 {
		fmt.Fprintln(stdout)
		return 0
	}
	slices.Sort(errored)
	fmt.Fprintf(stdout, " (no test verdict; the table counts them as not applied and not resolved): %s\n",
		listSome(errored, maxListed))
	return len(errored)
}

// maxListed is how many unknown instances a message names before it only counts the rest.
const maxListed = 20

// splitUnknown separates the predictions of the dataset's instances from those naming others, whose ids it returns
// sorted and each once.
func splitUnknown(preds []predictions.Prediction, dataset map[string]swebench.Instance) (known []predictions.Prediction, unknown []string) {
	for _, p := range preds {
		if _, ok := dataset[p.InstanceID]; ok {
			known = append(known, p)
		} else {
			unknown = append(unknown, p.InstanceID)
		}
	}
	slices.Sort(unknown)
	return known, slices.Compact(unknown)
}

// listSome joins the first n names and counts the others: "a, b (and 3 more)".
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s (and %d more)", strings.Join(names[:n], ", "), len(names)-n)
}

// The --predictions words that grade a dataset's own patches, or none, to validate the dataset before paying for a
// sweep, as the harness's gold run does: every gold patch should resolve its instance and no empty patch should.
// A file named gold or empty is read as ./gold or ./empty.
const (
	validateGold  = "gold"
	validateEmpty = "empty"
)

func isValidation(predictionsFlag string) bool {
	return predictionsFlag == validateGold || predictionsFlag == validateEmpty
}

// noFixPatch is the prediction of --predictions empty. A literally empty patch is graded empty_patch without running
// anything (as the harness does), which would check nothing about the dataset; this patch adds one marker file in a
// hidden folder that no test runner collects, so the tests run on the base commit with the test patch alone, and a
// FAIL_TO_PASS test that passes there shows in the validation.
const noFixPatch = `diff --git a/.ctxlab/no-fix b/.ctxlab/no-fix
new file mode 100644
--- /dev/null
+++ b/.ctxlab/no-fix
@@ -0,0 +1 @@
+starter grade --predictions empty: the tests run without a fix
`

// datasetPredictions makes one prediction per instance: its gold patch, or no fix; the model is the mode.
func datasetPredictions(rows []swebench.Instance, mode string) []predictions.Prediction {
	out := make([]predictions.Prediction, len(rows))
	for i, r := range rows {
		out[i] = predictions.Prediction{InstanceID: r.InstanceID, ModelNameOrPath: mode, ModelPatch: noFixPatch}
		if mode == validateGold {
			out[i].ModelPatch = r.Patch
		}
	}
	return out
}

// reportValidation prints the instances that fail validation (gold: not resolved; empty: resolved) with their
// grade_status and the first line of the reason, and returns how many there are.
func reportValidation(mode string, rows []results.Row, stdout io.Writer) int {
	var bad []results.Row
	for _, r := range rows {
		resolved, _ := r.Bool(specs.Resolved.Name)
		if resolved != (mode == validateGold) {
			bad = append(bad, r)
		}
	}
	resolvedCount := len(rows) - len(bad)
	if mode == validateEmpty {
		resolvedCount = len(bad)
	}
	fmt.Fprintf(stdout, "\nvalidation: %d of %d %s patches resolve their instance", resolvedCount, len(rows), mode)
	if len(bad) == 0 {
		fmt.Fprintln(stdout, "; the dataset is valid")
		return 0
	}
	if mode == validateGold {
		fmt.Fprintf(stdout, "; %d gold patch(es) do not:\n", len(bad))
	} else {
		fmt.Fprintf(stdout, "; these instances' FAIL_TO_PASS tests pass without a fix:\n")
	}
	for _, r := range bad {
		status := r.String(specs.GradeStatus.Name)
		if status == "" && r.String(results.FieldError) != "" {
			status = "error"
		}
		fmt.Fprintf(stdout, "  %s\t%s\t%s\n", r.String(results.FieldInstance), status, grading.Explanation(r))
	}
	return len(bad)
}

// grader runs the checkout and grade activities for one prediction.
type grader struct {
	acts    *activities.Activities
	store   cas.Store
	run     string
	grading specs.Grading
	dataset specs.Dataset
}

// grade returns the prediction's row and the stored log of its test runs: its grade plan (specs.GradePlan: a
// checkout and a grade node, keyed as a sweep's nodes are) run step by step, the row built as the Issue workflow
// builds its rows (results.RowMerger). A failure lands in the row's error field, with its kind, and the fields of
// the steps that did not finish stay null, as in a sweep.
func (g grader) grade(ctx context.Context, inst swebench.Instance, p predictions.Prediction) grading.Graded {
	model, method := predictions.SplitModelName(p.ModelNameOrPath)
	plan, err := specs.GradePlan(method, model, g.grading, specs.PatchKey([]byte(p.ModelPatch)))
	if err != nil {
		plan = &specs.Plan{Arms: []specs.Arm{{Method: method, Model: model}}}
	}
	arm := plan.Arms[0]
	var outputs map[string]api.NodeOutput
	var failedKey string
	if err == nil {
		outputs, failedKey, err = g.runArm(ctx, inst, p.ModelPatch, *plan)
	}
	row, _ := results.NewRowMerger(*plan).ArmRow(inst.InstanceID, arm, func(key string) (map[string]any, bool) {
		return outputs[key].Row, true // a node that failed or did not run has no fields
	}, func(row results.Row, st specs.ArmStep) {
		if st.Key == failedKey && row[results.FieldError] == nil {
			row[results.FieldError] = errorText(err)
		}
	})
	if err != nil && row[results.FieldError] == nil { // before any step: the instance or the patch was not stored
		row[results.FieldError] = errorText(err)
	}
	if err != nil {
		if kind := errorKind(err); kind != "" {
			row[results.FieldErrorKind] = kind
		}
	}
	out, ran := outputs[arm.Steps[len(arm.Steps)-1].Key]
	if err == nil && ran {
		// As the measure step defines it: the patch applies strictly (git apply).
		specs.PatchApplied.Set(row, out.Row[specs.PatchApply.Name] == string(diff.Applied))
	}
	return grading.Graded{Row: row, Log: out.Ref}
}

// errorKind is the kind an activity error carries: an ApplicationError's type, or the innermost errkind mark.
func errorKind(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		if k, ok := errkind.OfType(app.Type()); ok {
			return string(k)
		}
	}
	if k, ok := errkind.KindOf(err); ok {
		return string(k)
	}
	return ""
}

// runArm runs the steps of a grade plan's arm in order on one instance, the patch as the plan's given patch input,
// and returns their outputs by node key; on a failure it stops and returns the failed node's key ("" before any
// node ran) with the error.
func (g grader) runArm(ctx context.Context, inst swebench.Instance, patch string, plan specs.Plan) (
	map[string]api.NodeOutput, string, error) {
	instRef, err := cas.PutJSON(ctx, g.store, inst)
	if err != nil {
		return nil, "", err
	}
	patchRef, err := g.store.Put(ctx, []byte(patch))
	if err != nil {
		return nil, "", err
	}
	outputs := map[string]api.NodeOutput{specs.PatchKey([]byte(patch)): {Ref: patchRef}}
	nodes := map[string]specs.Node{}
	for _, n := range plan.Nodes {
		nodes[n.Key] = n
	}
	run := map[string]func(context.Context, api.NodeInput) (api.NodeOutput, error){
		specs.Checkout.Name: g.acts.Checkout, specs.Grade.Name: g.acts.Grade}
	for _, st := range plan.Arms[0].Steps {
		n := nodes[st.Key]
		in := api.NodeInput{Run: g.run, Instance: api.InstanceRef{ID: inst.InstanceID, Ref: instRef},
			Node: n.Key, Step: "grade." + st.ID, Params: n.Params, Inputs: map[string]api.NodeOutput{},
			Dataset: g.dataset}
		for name, key := range n.Inputs {
			in.Inputs[name] = outputs[key]
		}
		out, err := run[n.Activity](ctx, in)
		if err != nil {
			return outputs, n.Key, err
		}
		outputs[n.Key] = out
	}
	return outputs, "", nil
}

// errorText is an activity error's text for a row: an ApplicationError's message and its causes', without the
// "(type: ..., retryable: ...)" that its Error adds for Temporal's logs.
func errorText(err error) string {
	app, ok := err.(*temporal.ApplicationError)
	if !ok {
		return err.Error()
	}
	if cause := app.Unwrap(); cause != nil {
		return app.Message() + ": " + errorText(cause)
	}
	return app.Message()
}

// installConfigFlag is --install-config: a JSON object, kept as given (grading.install_config).
type installConfigFlag struct{ raw *json.RawMessage }

func (f installConfigFlag) String() string {
	if f.raw == nil {
		return ""
	}
	return string(*f.raw)
}

func (f installConfigFlag) Set(s string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return fmt.Errorf("want a JSON object (test_cmd, log_parser, eval_commands, install, ...): %w", err)
	}
	*f.raw = json.RawMessage(s)
	return nil
}

func (installConfigFlag) Type() string { return "OBJECT" }
