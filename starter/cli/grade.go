package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"ctxlab/activities"
	"ctxlab/activities/api"
	"ctxlab/grading"
	"ctxlab/grading/batch"
	"ctxlab/grading/imagebuild"
	"ctxlab/internal/images"
	"ctxlab/internal/listing"
	"ctxlab/internal/logs"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
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

// gradePredictions grades a predictions file without Temporal, so it needs no server and runs where no server can:
// the batch's pipeline is grading/batch's, each prediction graded through the steps by activities.PredictionGrader
// (memoized in the run folder as in a sweep, so a killed grade run picks up where it stopped when started again).
func gradePredictions(o gradeOptions, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := gradeRun(ctx, o, stdout, stderr)
	return exitcode.Saying(code, err, stderr)
}

// gradeRun reads the dataset and the predictions, checks this machine can grade them, grades them, replaces their
// rows in the run folder and says how they graded; an exitcode.Exit says why it stopped early.
func gradeRun(ctx context.Context, o gradeOptions, stdout, stderr io.Writer) (int, error) {
	datasetFile, err := filepath.Abs(o.dataset)
	if err != nil {
		return 0, exitcode.Failed(exitcode.Usage, err)
	}
	in, err := readGradeInputs(o, datasetFile, stderr)
	if err != nil {
		return 0, err
	}
	runDir := filepath.Join(o.runs, o.name)
	dataset := specs.Dataset{File: datasetFile, Repos: o.repos}
	if o.grading.Executor == "docker" && o.pull == pullMissingImages {
		b := images.Builder{Docker: o.grading.Docker, Log: stderr}
		if err := imagebuild.PullMissing(ctx, b, o.grading.Namespace, in.Graded(), o.pullConcurrency, stderr); err != nil {
			return 0, exitcode.With(exitcode.Fail, "starter: "+err.Error()+"\nstarter: nothing graded")
		}
	}
	if !o.noCheck && !checkGraders(ctx, dataset, o.grading, in.Graded(), runfolder.Repos(runDir), o.dataset,
		stderr) {
		return 0, exitcode.With(exitcode.Usage)
	}
	level := zerolog.InfoLevel
	if o.quiet {
		level = zerolog.WarnLevel
	}
	log, closeLog, err := logs.New(logs.Options{Console: stderr, ConsoleLevel: level, File: runfolder.Log(runDir)})
	if err != nil {
		return 0, exitcode.Failed(exitcode.Fail, err)
	}
	defer closeLog()
	acts := activities.New(o.runs, log)
	store, err := acts.Store(o.name)
	if err != nil {
		return 0, exitcode.Failed(exitcode.Fail, err)
	}
	g := activities.PredictionGrader{Acts: acts, Store: store, Run: o.name, Grading: o.grading, Dataset: dataset}
	log.Info().Int("predictions", len(in.Predictions)).Str("executor", o.grading.Executor).Str("run", runDir).
		Msg("grading")
	done := batch.GradeAll(ctx, in, g.Grade, o.concurrency, log)
	if ctx.Err() != nil {
		return 0, exitcode.With(exitcode.Fail, "starter: interrupted; graded instances are kept and skipped when run again")
	}
	run := grading.HarnessRun{ID: o.name, Dataset: o.dataset, Predictions: o.predictions,
		Executor: o.grading.Executor, Timeout: o.grading.Timeout.D()}
	out, err := batch.Write(ctx, store, runDir, run, in, done)
	if err != nil {
		return 0, exitcode.Failed(exitcode.Fail, err)
	}
	summary, err := acts.Summarize(ctx, api.SummarizeInput{Run: o.name, Title: "ctxlab grade: " + o.name})
	if err != nil {
		return 0, exitcode.Failed(exitcode.Fail, err)
	}
	fmt.Fprint(stdout, summary)
	return printGradeOutcome(o, runDir, out, stdout, stderr), nil
}

// readGradeInputs reads the dataset and the predictions of its instances: those naming other instances stop the
// run, or with --ignore-unknown are skipped, saying so.
func readGradeInputs(o gradeOptions, datasetFile string, stderr io.Writer) (batch.Inputs, error) {
	in, err := batch.Read(datasetFile, o.predictions)
	if err != nil {
		return in, exitcode.With(exitcode.Usage, err.Error())
	}
	if len(in.Unknown) > 0 {
		if !o.ignoreUnknown {
			return in, exitcode.With(exitcode.Usage, fmt.Sprintf("%s: %d prediction(s) name instances that are not in "+
				"%s: %s\nstarter: nothing graded; --ignore-unknown grades the %d other prediction(s)",
				o.predictions, in.Ignored, o.dataset, listing.Some(in.Unknown, maxListed), len(in.Predictions)))
		}
		fmt.Fprintf(stderr, "starter: ignored %d prediction(s) naming instances that are not in %s: %s\n",
			in.Ignored, o.dataset, listing.Some(in.Unknown, maxListed))
	}
	if len(in.Predictions) == 0 {
		return in, exitcode.With(exitcode.Usage, fmt.Sprintf("starter: nothing to grade: no prediction in %s names an "+
			"instance of %s", o.predictions, o.dataset))
	}
	return in, nil
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
