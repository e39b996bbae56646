package executor

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"ctxlab/activities/api/errkind"
	"ctxlab/grading/testlog"
	"ctxlab/grading/testrun"
	"ctxlab/patch/diff"
)

// Local grades in a fresh temporary worktree on this machine, removed afterwards. A repository with a go.mod runs
// go test -json; any other runs Python tests (pytest -rA by default, or Config.TestCmdFor) on the test patch's files,
// or on exactly the listed test ids (Config.Tests). The model patch's test files are reset to base_commit first
// unless Config.ModelTests keeps them.
type Local struct{}

// Run implements Executor. A Python grade that did not resolve and shows a sign of a lacking environment is
// weighed against a grade without the model patch (environmentFailure), as the docker executor's is.
func (l Local) Run(ctx context.Context, r Request) (Result, error) {
	return l.run(ctx, r, true)
}

// run grades r, with its model patch applied or without it (the grade environmentFailure weighs a sign against).
func (l Local) run(ctx context.Context, r Request, withPatch bool) (Result, error) {
	var res Result
	if r.Materialize == nil {
		return res, fmt.Errorf("local executor: nothing to materialize the repository with")
	}
	dir, err := TempDir()
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	if err := r.Materialize(ctx, dir); err != nil {
		return res, err
	}
	// The language, a Python environment (its requirement files, the repository's layout, the modules it holds) and
	// for Go how the modules are built are read before the model patch applies, so the patch cannot change which
	// rules it is held to.
	lang := LanguageOf(dir)
	var env *pythonEnv
	var layout testrun.GoLayout
	switch lang {
	case LangPython:
		if env, err = localEnvironment(r, dir); err != nil {
			return res, err
		}
	case LangGo:
		if layout, err = testrun.ReadGoLayout(dir); err != nil {
			return res, fmt.Errorf("instance %s: %w", r.Instance.InstanceID, err)
		}
	}
	baseModules := moduleNames(dir)
	reset, err := filesToReset(r, lang)
	if err != nil {
		return res, err
	}
	saved, err := saveFiles(dir, slices.Sorted(maps.Keys(reset)))
	if err != nil {
		return res, fmt.Errorf("instance %s: saving the test files: %w", r.Instance.InstanceID, err)
	}
	if withPatch {
		if applied, err := applyModelPatch(r, lang, dir, reset, &res); !applied || err != nil {
			return res, err
		}
	}
	if err := saved.restore(); err != nil {
		return res, fmt.Errorf("instance %s: %w", r.Instance.InstanceID, err)
	}
	if _, err := diff.ApplyDir(dir, r.Instance.TestPatch); err != nil {
		return res, fmt.Errorf("instance %s: %w: %v", r.Instance.InstanceID, ErrTestPatch, err)
	}
	o, cleanup, err := localTestOptions(ctx, r, lang, dir, res.ModelTestFiles, env)
	if err != nil {
		return res, err
	}
	defer cleanup()
	if lang == LangGo && len(o.Command) == 0 {
		if o.Layout, err = goLayoutWithTestPatch(layout, dir, r.Instance.TestPatch); err != nil {
			return res, fmt.Errorf("instance %s: %w", r.Instance.InstanceID, err)
		}
		o.TestPatchFiles = TestFiles(r.Instance.TestPatch)
	}
	run, err := testrun.Run(ctx, o)
	res.Ran, res.Output, res.Report, res.TimedOut, res.Duration, res.Command = true, run.Output, run.Report,
		run.TimedOut, run.Duration, run.Args
	res.Isolation, res.Note = run.Isolation, joinNotes(run.Note, env)
	// A Python command's exit code is its own; a Go run runs many binaries and has none.
	res.ExitCode, res.ExitCodeKnown = run.ExitCode, len(o.Command) > 0
	if err == nil && lang == LangPython && withPatch {
		// A module the tests could not import that is the environment's to provide fails the grade as the
		// environment's, not the model's: only when the grade without the model patch lacks it too (the patch's
		// code can raise ModuleNotFoundError for any name).
		err = environmentFailure(ctx, r, run.Report, setupStatus{}, func(ctx context.Context) (baseRun, error) {
			return l.gradeWithoutPatch(ctx, r, baseModules)
		})
	}
	return res, markRun(err)
}

// gradeWithoutPatch grades r again in a fresh worktree without the model patch: what its tests could not import and
// whether any of the instance's tests ran.
func (l Local) gradeWithoutPatch(ctx context.Context, r Request, modules map[string]bool) (baseRun, error) {
	res, err := l.run(ctx, r, false)
	if err != nil {
		return baseRun{}, fmt.Errorf("instance %s: grading without the model patch, to tell the environment's "+
			"failure from the patch's: %w", r.Instance.InstanceID, err)
	}
	return baseRun{modules: modules, rerun: true, missing: res.Report.MissingModules,
		testsRan: listedTestsRan(r.Instance, res.Report)}, nil
}

// localEnvironment plans r's stated environment in the worktree dir at base_commit, with the folders that the
// install of the repository would make importable.
func localEnvironment(r Request, dir string) (*pythonEnv, error) {
	env, err := planPythonEnv(r, worktreeFile(dir))
	if env != nil && env.installsRepo {
		env.importRoots = srcRoots(dir)
	}
	return env, err
}

// joinNotes is the run's note and what the local executor says of the stated environment (commands it does not
// run, an interpreter of another version).
func joinNotes(note string, env *pythonEnv) string {
	var parts []string
	if note != "" {
		parts = append(parts, note)
	}
	if env != nil {
		if len(env.notRun) > 0 {
			parts = append(parts, fmt.Sprintf("not run by the local executor (%s): %s", env.source,
				strings.Join(env.notRun, "; ")))
		}
		parts = append(parts, env.notes...)
	}
	return strings.Join(parts, "; ")
}

// localTestOptions are the test run's options in the worktree dir: go test -json for a Go module with no
// configured command, else the Python command, started through ctxlab's Python runner (pythonRunner);
// modelTests are the model's own test files, which the run leaves out. cleanup removes what the options need
// outside the worktree, once the run is over.
func localTestOptions(ctx context.Context, r Request, lang, dir string, modelTests []string,
	env *pythonEnv) (o testrun.Options, cleanup func(), err error) {
	o = testrun.Options{Dir: dir, Timeout: r.Timeout, OutputCap: r.OutputCap, Heartbeat: r.Heartbeat,
		Isolate: r.Config.Isolation != "none",
		GoProxy: r.Config.GoProxy, ExcludeTestFiles: modelTests}
	testCmd := r.Config.TestCmdFor(r.Instance.Repo, lang)
	if lang == LangGo && testCmd == "" {
		// Without the go command every package would "fail to build": the machine's failure, not the patch's.
		if _, err := exec.LookPath("go"); err != nil {
			return o, nil, errkind.Mark(errkind.Toolchain, fmt.Errorf("instance %s: no Go toolchain to build "+
				"the tests with (install Go, or put the go command on PATH): %w", r.Instance.InstanceID, err))
		}
		// A Multi-SWE-bench row's tests that must not newly fail run too (testlog.DecideInstance checks them).
		o.Tests = slices.Concat(r.Instance.FailToPass, r.Instance.PassToPass, r.Instance.NoNewFailures)
		return o, func() {}, nil
	}
	py, err := pythonCommand(r, dir, testCmd, env)
	if err != nil {
		return o, nil, err
	}
	o.Command, o.Parser = py.cmd, py.parser
	if py.parser == testlog.ParserGo {
		return o, func() {}, nil // a go test command in a Python repository: Go's own runner, no helpers
	}
	pythonPath := []string{dir}
	if env != nil {
		if py.python, err = env.prepare(ctx, r.Instance.InstanceID, py.python, r.Config.PythonWheels); err != nil {
			return o, nil, err
		}
		for _, root := range env.importRoots {
			pythonPath = append([]string{filepath.Join(dir, root)}, pythonPath...)
		}
	}
	pathEnv := os.Getenv("PATH")
	runner, err := newPythonRunner(dir, py.python, pathEnv, py.listed)
	if err != nil {
		return o, nil, fmt.Errorf("instance %s: %w", r.Instance.InstanceID, err)
	}
	o.Command, o.Results, o.OutputIfUnclaimed = runner.Command(py.cmd, pathEnv), runner.Results, !py.channel
	o.ReadOnly = runner.pythonReadOnly(dir)
	// Python writes no bytecode into the worktree, and finds the repository's own packages (under src too, when
	// the environment installs the repository and it keeps them there).
	o.ExtraEnv = append([]string{"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONPATH=" + strings.Join(pythonPath, string(os.PathListSeparator))}, runner.Env(pathEnv)...)
	return o, runner.Close, nil
}

// goLayoutWithTestPatch is base (the layout at base_commit) with the modules the test patch added to the worktree
// in dir.
func goLayoutWithTestPatch(base testrun.GoLayout, dir, testPatch string) (*testrun.GoLayout, error) {
	paths, err := diff.SafePaths(testPatch)
	if err != nil {
		return nil, err
	}
	l := base
	if slices.ContainsFunc(paths, func(p string) bool { return filepath.Base(p) == "go.mod" }) {
		after, err := testrun.ReadGoLayout(dir)
		if err != nil {
			return nil, err
		}
		l = base.WithModulesOf(after, paths)
	}
	return &l, nil
}

// pythonRun is how the local executor runs an instance's Python tests.
type pythonRun struct {
	cmd    []string
	parser string
	// python is the environment's interpreter (the python shims start it); listed the ids of the listed mode.
	python string
	listed []string
	// channel says the command visibly runs pytest or unittest, so its results come from ctxlab's results file
	// only; otherwise (tox, a script) the output is parsed when no runner claimed the file.
	channel bool
}

// pythonCommand is the local Python test command: testCmd (split on spaces) or `python -m pytest -rA`, followed by
// the test patch's Python files, or in the listed mode by exactly the instance's test ids: for pytest through a
// plugin that deselects every other collected test (ctxlab_listed, which ctxlab_boot loads), for unittest as
// dotted ids. With a stated environment (env) the command is a bash script in the harness's shape: its eval
// commands, then its test commands (testCmd, else its test_cmd), the arguments appended to the last.
func pythonCommand(r Request, dir, testCmd string, env *pythonEnv) (pythonRun, error) {
	var run pythonRun
	want := r.Config.Python
	if env != nil && env.python != "" {
		want = env.python
	}
	py, pyErr := FindPython(want, "pytest")
	var shellCmds []string
	switch {
	case env != nil:
		shellCmds = []string{"python -m pytest -rA -p no:cacheprovider"}
		if testCmd != "" {
			shellCmds = []string{testCmd}
		} else if len(env.cfg.TestCmd) > 0 {
			shellCmds = slices.Clone([]string(env.cfg.TestCmd))
		}
		run.parser = envParser(r.Config, env, shellCmds[len(shellCmds)-1])
	case testCmd != "":
		run.cmd, run.parser = strings.Fields(testCmd), parserFor(r.Config, testCmd)
	default:
		run.cmd, run.parser = []string{py, "-m", "pytest", "-rA", "-p", "no:cacheprovider"}, parserFor(r.Config, "pytest")
	}
	if run.parser == testlog.ParserGo && env == nil {
		return run, nil // a go test command in a Python repository: Go's own runner, no helpers
	}
	if pyErr != nil && (testCmd != "" || env != nil) {
		py, pyErr = FindPython(want, "")
	}
	if pyErr != nil {
		return run, pyErr
	}
	run.python = py
	args, err := pythonTestArgs(r, dir, &run)
	if err != nil {
		return run, err
	}
	if env == nil {
		run.cmd = append(run.cmd, args...)
		run.channel = runsTestRunner(strings.Join(run.cmd, " "))
		return run, nil
	}
	last := len(shellCmds) - 1
	shellCmds[last] = strings.Join(append([]string{shellCmds[last]}, quoteAll(args)), " ")
	run.channel = runsTestRunner(strings.Join(shellCmds, "\n"))
	run.cmd = []string{"bash", "-c", strings.Join(append(slices.Clone([]string(env.cfg.EvalCommands)), shellCmds...), "\n")}
	return run, nil
}

// envParser is the log parser of a stated environment's command: the spec's, else the environment's log_parser (a
// harness parser, which reads the output when no runner claims the results file), else one chosen from the command.
func envParser(cfg Config, env *pythonEnv, cmd string) string {
	if cfg.LogParser != "" {
		return cfg.LogParser
	}
	if p, ok := testlog.HarnessParser(env.cfg.LogParser); ok {
		return p
	}
	return parserFor(cfg, cmd)
}

// runnerFamily is the runner whose test names a parser reads: pytest's node ids or unittest's ids (the harness's
// Django parser reads unittest's), or "" for another.
func runnerFamily(parser string) string {
	switch parser {
	case testlog.ParserPytest, testlog.ParserHarnessPytest, testlog.ParserHarnessPytestOptions,
		testlog.ParserHarnessPytestV2, testlog.ParserHarnessMatplotlib, testlog.ParserHarnessSeaborn:
		return testlog.ParserPytest
	case testlog.ParserUnittest, testlog.ParserHarnessDjango:
		return testlog.ParserUnittest
	}
	return ""
}

// pythonTestArgs are the arguments after the test command: the test patch's Python files, or in the listed mode
// the instance's ids (the files holding them for pytest, whose listed plugin deselects the rest; run.listed is set).
func pythonTestArgs(r Request, dir string, run *pythonRun) ([]string, error) {
	var args []string
	if r.Config.Tests != TestsListed {
		for _, f := range TestFiles(r.Instance.TestPatch) {
			if strings.HasSuffix(f, ".py") {
				args = append(args, f)
			}
		}
		return args, nil
	}
	ids := listedIDs(r.Instance.FailToPass, r.Instance.PassToPass)
	switch runnerFamily(run.parser) {
	case testlog.ParserPytest:
		run.listed = ids
		args = pytestFiles(dir, ids)
	case testlog.ParserUnittest:
		for _, id := range ids {
			args = append(args, UnittestID(id))
		}
	default:
		return nil, errkind.Mark(errkind.BadInput, fmt.Errorf("instance %s: grading.tests %q needs the "+
			"pytest or unittest log parser, not %q", r.Instance.InstanceID, TestsListed, run.parser))
	}
	return args, nil
}

// testRunnerWord finds pytest (run by name or as a module) or `-m unittest` in a command line.
var testRunnerWord = regexp.MustCompile(`(^|[\s'"/])(pytest|py\.test)([\s'";&|)]|$)|-m\s+unittest([\s'";&|)]|$)`)

// runsTestRunner says whether a command line visibly runs pytest or unittest, directly or wrapped (env, bash -c).
func runsTestRunner(cmd string) bool { return testRunnerWord.MatchString(cmd) }

// FindPython returns want if set, else the first of python3 on PATH and /usr/bin/python3 that imports module.
// An interpreter found is remembered for the process (per module and PATH): importing pytest to check takes
// 0.15-0.4 s, as long as a small instance's whole test run. A failure is not remembered, so installing the
// module later is seen.
func FindPython(want, module string) (string, error) {
	if want != "" {
		return want, nil
	}
	key := module + "\x00" + os.Getenv("PATH")
	if p, ok := foundPython.Load(key); ok {
		return p.(string), nil
	}
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		if module == "" || exec.Command(path, "-c", "import "+module).Run() == nil {
			foundPython.Store(key, path)
			return path, nil
		}
	}
	return "", errkind.Mark(errkind.MissingRunner, fmt.Errorf("no python3 that can import %s (set grading.python, "+
		"or install python3-%s)", module, module))
}

// foundPython maps module and PATH to the interpreter FindPython found.
var foundPython sync.Map

var _ Executor = Local{}
