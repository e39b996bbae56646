package executor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
	"ctxlab/grading/testrun"
	"ctxlab/patch/diff"
)

// The SWE-bench harness's constants (swebench/harness/constants): the eval script prints these around the test
// command's output, and only what lies between them is parsed.
const (
	StartTestOutput = ">>>>> Start Test Output"
	EndTestOutput   = ">>>>> End Test Output"
	// TestExitCode marks the test command's exit code in the log, and TestExitCodeVar is the shell variable the eval
	// script keeps it in (SWE-bench 5.0: swebench/harness/constants/__init__.py, SWE-bench/SWE-bench at commit
	// 334882dd, TEST_EXIT_CODE and TEST_EXIT_CODE_VAR).
	TestExitCode    = ">>>>> Test Exit Code"
	TestExitCodeVar = "SWEBENCH_TEST_EXIT_CODE"
	heredoc         = "EOF_114329324912"
	// Testbed is where instance images hold the repository; condaEnv its environment.
	Testbed  = "/testbed"
	condaEnv = "testbed"
)

// helperDirVar names the eval script's variable holding the folder it writes ctxlab's Python results helpers into,
// just before the tests run (a fresh folder of mktemp's, so any user the image runs as can write it; first on the
// tests' PYTHONPATH); resultsFDEnv tells the helper which descriptor is the results channel.
const (
	helperDirVar = "CTXLAB_HELPERS"
	resultsFDEnv = "CTXLAB_RESULTS_FD"
	// helperHeredoc ends the helpers' text in the eval script.
	helperHeredoc = "CTXLAB_HELPER_EOF"
)

// InstanceImage is the image of an instance under a namespace: Multi-SWE-bench's mswebench/{org}_m_{repo}:pr-{number}
// (read from its instance id, "{org}__{repo}-{number}"), else the SWE-bench harness's name (ImageName), which
// SWE-rebench's swerebench namespace shares.
func InstanceImage(namespace, instanceID string) string {
	if namespace == "mswebench" {
		if org, rest, ok := strings.Cut(instanceID, "__"); ok {
			if i := strings.LastIndex(rest, "-"); i > 0 {
				return strings.ToLower(fmt.Sprintf("mswebench/%s_m_%s:pr-%s", org, rest[:i], rest[i+1:]))
			}
		}
	}
	return ImageName(namespace, instanceID)
}

// ImageOf is the image an instance is graded in: the row's own image when it names one (SWE-rebench's
// docker_image), else InstanceImage under the namespace.
func ImageOf(namespace string, in swebench.Instance) string {
	if img := strings.TrimSpace(in.Image); img != "" {
		return img
	}
	return InstanceImage(namespace, in.InstanceID)
}

// ImageName is the harness's instance image: {namespace}/sweb.eval.x86_64.{instance id, lowercased, "__" replaced
// by "_1776_"}:latest.
func ImageName(namespace, instanceID string) string {
	if namespace == "" {
		namespace = "swebench"
	}
	id := strings.ReplaceAll(strings.ToLower(instanceID), "__", "_1776_")
	return namespace + "/sweb.eval.x86_64." + id + ":latest"
}

// Docker grades in a container of the instance's image, through the docker CLI: create (no network unless the spec
// says otherwise, no variables of this process), copy the files the model patch touches out of /testbed, apply the
// patch on this side with package diff (same ladder and path checks as Local), copy the results back, run the
// harness-shaped eval script under the timeout, and remove the container whatever happened.
type Docker struct{}

// dockerEnv is what the docker CLI itself may see: the allowlist plus the variables that locate the engine.
func dockerEnv() []string {
	var extra []string
	for _, k := range []string{"DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY"} {
		if v, ok := os.LookupEnv(k); ok {
			extra = append(extra, k+"="+v)
		}
	}
	return testrun.Env(extra)
}

// Run implements Executor. A Python grade that does not resolve and shows signs of a broken environment is
// weighed by environmentFailure against a grade of the instance without the model patch (gradeWithoutPatch).
func (d Docker) Run(ctx context.Context, r Request) (Result, error) {
	g, err := d.grade(ctx, r, true, false)
	res := g.res
	if err != nil || !res.Ran || g.lang != LangPython {
		return res, err
	}
	if g.setup.failed() {
		addNote(&res, fmt.Sprintf("the environment's setup (eval_commands and install) exited %d", g.setup.code))
	}
	return res, environmentFailure(ctx, r, res.Report, g.setup, func(ctx context.Context) (baseRun, error) {
		return d.gradeWithoutPatch(ctx, r)
	})
}

// containerGrade is one run of the eval script in a fresh container of an instance's image: its result, the
// image's language, how the setup went, and (when asked) the module names /testbed held after it.
type containerGrade struct {
	res     Result
	lang    string
	setup   setupStatus
	modules map[string]bool
}

// grade runs the eval script for r in a fresh container, the model patch applied first (withPatch), or not; the
// container is removed whatever happens. listModules lists /testbed's module names after the run.
func (Docker) grade(ctx context.Context, r Request, withPatch, listModules bool) (containerGrade, error) {
	var g containerGrade
	var paths []string
	if withPatch {
		// Paths are checked before any docker call, so an escaping patch never reaches the container.
		var err error
		if paths, err = diff.SafePaths(r.Patch); err != nil {
			g.res.Apply = diff.Report{Outcome: diff.OutcomeOf(err)}
			g.res.ApplyErr = err.Error()
			return g, nil
		}
	}
	tmp, err := TempDir()
	if err != nil {
		return g, err
	}
	defer os.RemoveAll(tmp)
	c := container{ctx: ctx, bin: r.Config.Docker}
	if c.bin == "" {
		c.bin = "docker"
	}
	defer c.remove()
	if err := c.start(r); err != nil {
		return g, err
	}
	g.lang = c.language()
	if withPatch {
		if err := c.applyPatch(r, g.lang, paths, tmp, &g.res); err != nil || g.res.ApplyErr != "" {
			return g, err
		}
	}
	plan := evalPlan(r, g.lang)
	helped := false
	if g.lang == LangPython {
		plan.Cmd, helped = withResultsHelper(plan.Cmd)
	}
	if err := c.copyEvalScript(r, plan, helped, tmp); err != nil {
		return g, err
	}
	channel, err := newChannel(tmp)
	if err != nil {
		return g, err
	}
	defer channel.Close()
	run, err := testrun.Run(ctx, testrun.Options{Dir: tmp, Timeout: r.Timeout, OutputCap: r.OutputCap,
		Heartbeat: r.Heartbeat, Command: channel.command(c.bin, c.name), Parser: testlog.ParserNone,
		ExtraEnv: dockerEnv()})
	res := &g.res
	res.Ran, res.Output, res.TimedOut, res.Duration, res.Command = true, run.Output, run.TimedOut, run.Duration,
		[]string{c.bin, "exec", c.name, "/bin/bash", "/eval.sh"}
	res.Isolation = "container"
	if err != nil {
		return g, err
	}
	if g.setup, err = readResults(res, channel, plan.Parser, helped); err != nil {
		return g, err
	}
	if listModules {
		g.modules = c.moduleNames()
	}
	return g, nil
}

// gradeWithoutPatch grades r again, in a fresh container, without the model patch: what its tests could not
// import, how its setup went, whether any of the instance's tests ran, and the module names /testbed holds.
func (d Docker) gradeWithoutPatch(ctx context.Context, r Request) (baseRun, error) {
	g, err := d.grade(ctx, r, false, true)
	if err != nil {
		return baseRun{}, fmt.Errorf("instance %s: grading without the model patch, to tell the environment's "+
			"failure from the patch's: %w", r.Instance.InstanceID, err)
	}
	return baseRun{modules: g.modules, rerun: true, missing: g.res.Report.MissingModules, setup: g.setup,
		testsRan: listedTestsRan(r.Instance, g.res.Report)}, nil
}

// start removes the containers of graders that died (SIGKILL, a lost machine), then creates and starts this one.
func (c *container) start(r Request) error {
	if _, err := RemoveStaleContainers(c.ctx, c.bin); err != nil {
		return err
	}
	image := ImageOf(r.Config.Namespace, r.Instance)
	if err := c.checkImage(r.Instance.InstanceID, image); err != nil {
		return err
	}
	if err := c.create(r, image); err != nil {
		return err
	}
	_, err := c.docker("start", c.name)
	return err
}

// applyPatch applies the model patch (its files paths copied out of /testbed into tmp) and copies the result back,
// recording in res how it applied. What the stated environment needs and the image lacks is checked before the
// patch reaches the container, and fails the grade once the patch has applied (checkEnvironment).
func (c *container) applyPatch(r Request, lang string, paths []string, tmp string, res *Result) error {
	var envErr error
	if lang == LangPython {
		var notes []string
		notes, envErr = c.checkEnvironment(r)
		addNote(res, strings.Join(notes, "; "))
	}
	tree := filepath.Join(tmp, "files") // the patched files, copied out of the container and back
	if err := c.copyOut(paths, tree); err != nil {
		return err
	}
	rep, err := diff.Apply(tree, r.Patch, diff.Options{})
	res.Apply = rep
	if err != nil {
		res.ApplyErr = err.Error()
		return nil
	}
	if envErr != nil {
		return envErr
	}
	return c.copyIn(tree, rep, dropTestFiles(r, lang, rep, res))
}

// readResults fills in res's exit code and report: from the channel when the test command loaded the results
// helper (helped), else from the log between the markers, read with parser. It returns the setup's status.
func readResults(res *Result, channel *resultsChannel, parser string, helped bool) (setupStatus, error) {
	records, err := channel.read()
	if err != nil {
		return setupStatus{}, err
	}
	res.ExitCode, res.ExitCodeKnown = records.exitCode, records.exitKnown
	if helped {
		var note string
		res.Report, note, err = helperReport(parser, records.results)
		addNote(res, note)
		return records.setup, err
	}
	section, ok := Between(string(res.Output))
	if !ok {
		addNote(res, "the test-output markers are missing from the log: no test counts as run")
		res.Report = testlog.Report{Tests: map[string][]testlog.TestResult{}}
		return records.setup, nil
	}
	res.Report, err = testlog.Parse(parser, strings.NewReader(section))
	return records.setup, err
}

// addNote adds a note to the row's (none for an empty one).
func addNote(res *Result, note string) {
	switch {
	case note == "":
	case res.Note == "":
		res.Note = note
	default:
		res.Note += "; " + note
	}
}

// container is one grade's container, driven through the docker CLI at bin.
type container struct {
	ctx  context.Context
	bin  string
	name string // set by create
}

// docker runs the docker CLI (at most 10 minutes), its error marked with the Docker failure it shows.
func (c *container) docker(args ...string) ([]byte, error) {
	cctx, cancel := context.WithTimeout(c.ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, c.bin, args...)
	cmd.Env = dockerEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, markDocker(fmt.Errorf("docker %s: %w: %s", strings.Join(args[:min(2, len(args))], " "), err,
			bytes.TrimSpace(out)), out)
	}
	return out, nil
}

// checkImage fails when the image is not on this machine: create would try to pull it, so it is checked first and
// the row fails at once, saying what to do.
func (c *container) checkImage(instanceID, image string) error {
	_, err := c.docker("image", "inspect", "--format", "{{.Id}}", image)
	if err == nil {
		return nil
	}
	if k, _ := errkind.KindOf(err); k == errkind.DockerDaemon {
		return fmt.Errorf("instance %s: no Docker engine answers (start dockerd, or set DOCKER_HOST): %w", instanceID, err)
	}
	return errkind.Mark(errkind.DockerImage, fmt.Errorf("instance %s: image %s is not on this machine: run "+
		"`starter images pull --spec SPEC` (or --dataset FILE; `docker pull %s` for this one), or, for a dataset "+
		"that publishes no images, `starter images build` with the same flags: %w", instanceID, image, image, err))
}

// create creates the container of image, labelled with this process, on the spec's network (none by default).
func (c *container) create(r Request, image string) error {
	c.name = fmt.Sprintf("ctxlab-%s-%d", safe(r.Instance.InstanceID), time.Now().UnixNano())
	network := r.Config.Network
	if network == "" {
		network = "none"
	}
	create := append([]string{"create", "--name", c.name, "--network", network, "--init"}, ContainerLabels()...)
	_, err := c.docker(append(create, image, "tail", "-f", "/dev/null")...)
	return err
}

// remove removes the container, whatever the grade's context says; it also kills what a timed-out eval script left
// running in it. The anonymous volumes an image declares (VOLUME) go with it (-v): the tests wrote into them, and
// they would otherwise stay on the machine, full of what the patch's code put there.
func (c *container) remove() {
	if c.name == "" {
		return // none was created
	}
	rm := exec.Command(c.bin, "rm", "-f", "-v", c.name)
	rm.Env = dockerEnv()
	_, _ = rm.CombinedOutput()
}

// language is the image's, which decides the test-file rules and the default test command: Go when /testbed has a
// go.mod.
func (c *container) language() string {
	if _, err := c.docker("exec", c.name, "test", "-f", path.Join(Testbed, "go.mod")); err == nil {
		return LangGo
	}
	return LangPython
}

// copyOut copies the files at paths out of /testbed into tree, for the patch to apply to.
func (c *container) copyOut(paths []string, tree string) error {
	for _, p := range paths {
		dst := filepath.Join(tree, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		// A missing file is one the patch creates (or a conflict the applier reports).
		_, _ = c.docker("cp", c.name+":"+path.Join(Testbed, p), dst)
	}
	return os.MkdirAll(tree, 0o755)
}

// dropTestFiles records in res the test files of the applied patch rep that never reach the container (the test
// patch's, which the eval script resets anyway, and the model's others unless the config keeps them) and those that
// do, and returns the dropped ones.
func dropTestFiles(r Request, lang string, rep diff.Report, res *Result) map[string]bool {
	testPaths := TestFiles(r.Instance.TestPatch)
	dropped := map[string]bool{}
	for _, p := range rep.Files {
		switch {
		case contains(testPaths, p) || (IsTestFile(lang, p) && !r.Config.modelTestsKept()):
			dropped[p] = true
			res.TestFilesDropped = append(res.TestFilesDropped, p)
		case IsTestFile(lang, p) && !contains(rep.Deleted, p):
			res.ModelTestFiles = append(res.ModelTestFiles, p)
		}
	}
	return dropped
}

// copyIn makes /testbed hold the patch's changes: the files rep deleted are removed, the ones it wrote (in tree)
// copied back, but for the dropped test files.
func (c *container) copyIn(tree string, rep diff.Report, dropped map[string]bool) error {
	for _, p := range rep.Deleted {
		if dropped[p] {
			continue
		}
		if _, err := c.docker("exec", c.name, "rm", "-f", path.Join(Testbed, p)); err != nil {
			return err
		}
	}
	for _, p := range rep.Files {
		if contains(rep.Deleted, p) || dropped[p] {
			continue
		}
		if _, err := c.docker("exec", c.name, "mkdir", "-p", path.Join(Testbed, path.Dir(p))); err != nil {
			return err
		}
		if _, err := c.docker("cp", filepath.Join(tree, filepath.FromSlash(p)), c.name+":"+path.Join(Testbed, p)); err != nil {
			return err
		}
	}
	return nil
}

// copyEvalScript writes plan's eval script (in tmp) and copies it to the container's /eval.sh; helped says the
// test command loads ctxlab's Python results helper, which the script then writes into the container.
func (c *container) copyEvalScript(r Request, plan testPlan, helped bool, tmp string) error {
	eval := Eval{BaseCommit: r.Instance.BaseCommit, TestPatch: r.Instance.TestPatch, TestCmd: plan.Cmd,
		Install: plan.Install, EvalCommands: plan.EvalCommands, ResultsHelper: helped}
	script := filepath.Join(tmp, "eval.sh")
	if err := os.WriteFile(script, []byte(eval.Script()), 0o755); err != nil {
		return err
	}
	_, err := c.docker("cp", script, c.name+":/eval.sh")
	return err
}

// Between returns the part of an eval log between the harness's start and end markers.
func Between(log string) (string, bool) {
	_, after, ok := strings.Cut(log, StartTestOutput)
	if !ok {
		return "", false
	}
	section, _, ok := strings.Cut(after, EndTestOutput)
	return section, ok
}

// testPlan is what an eval script runs for an instance and how its log is read.
type testPlan struct {
	Cmd, Parser string
	// Install and EvalCommands come from a harness spec (HarnessSpec).
	Install      string
	EvalCommands []string
	// Source says where the command came from: "config", "install_config", "table" or "default".
	Source string
}

// testCommand is evalPlan's command and parser.
func testCommand(r Request, lang string) (string, string) {
	p := evalPlan(r, lang)
	return p.Cmd, p.Parser
}

// evalPlan chooses the test command and parser, first match wins:
//   - the spec's command (Config.TestCmdFor the repository, else for the language);
//   - for Python, the instance's harness spec (InstanceSpec: a SWE-rebench row's install_config, else SWE-bench's
//     per-repository table), run on the harness's test directives (TestDirectives), with the spec's install and
//     eval commands, as make_eval_script_list_py does; grading.tests "listed" does not apply, since those
//     repositories' test names (Django's, sympy's, or pytest ids cut at a space) are no command-line arguments;
//   - the defaults: Django's runtests.py with module directives, else pytest -rA on the test files (or, under
//     grading.tests "listed", on exactly the FAIL_TO_PASS and PASS_TO_PASS node ids); for Go, go test -json on
//     every package of the module, since a dataset's PASS_TO_PASS may name tests of packages the test patch does
//     not touch, and every result is parsed per package (testlog.Decide).
//
// The parser is Config.LogParser when set, else the harness spec's, else chosen from the command (parserFor).
func evalPlan(r Request, lang string) testPlan {
	files := TestFiles(r.Instance.TestPatch)
	var directives []string
	cmd := r.Config.TestCmdFor(r.Instance.Repo, lang)
	plan := func(cmd, source string) testPlan {
		return testPlan{Cmd: cmd, Parser: parserFor(r.Config, cmd), Source: source}
	}
	if lang == LangGo {
		if cmd == "" {
			return plan("go test -json ./...", "default")
		}
		return plan(cmd, "config")
	}
	if cmd == "" {
		if spec, source, ok := InstanceSpec(withEnvironment(r)); ok {
			cmds := slices.Clone(spec.TestCmd)
			last := len(cmds) - 1
			cmds[last] = strings.Join(append([]string{cmds[last]}, TestDirectives(r.Instance.Repo, r.Instance.TestPatch)...), " ")
			p := plan(strings.Join(cmds, "\n"), source)
			if r.Config.LogParser == "" && spec.Parser != "" {
				p.Parser = spec.Parser
			}
			p.Install, p.EvalCommands = spec.Install, spec.EvalCommands
			return p
		}
	}
	source := "config"
	if cmd == "" {
		source = "default"
	}
	if r.Config.Tests == TestsListed {
		if cmd == "" {
			cmd = "pytest -rA"
		}
		for _, id := range append(append([]string{}, r.Instance.FailToPass...), r.Instance.PassToPass...) {
			if !contains(directives, shellQuote(id)) {
				directives = append(directives, shellQuote(id))
			}
		}
		return plan(strings.Join(append([]string{cmd}, directives...), " "), source)
	}
	django := r.Instance.Repo == "django/django" && cmd == ""
	for _, f := range files {
		if !strings.HasSuffix(f, ".py") {
			continue
		}
		if django {
			f = strings.TrimSuffix(strings.TrimPrefix(f, "tests/"), ".py")
			f = strings.ReplaceAll(f, "/", ".")
		}
		directives = append(directives, f)
	}
	switch {
	case cmd != "":
	case django:
		cmd = testDjango
	default:
		cmd = "pytest -rA"
	}
	return plan(strings.Join(append([]string{cmd}, directives...), " "), source)
}

// condaActivate activates the harness images' conda environment, only where there is one: images ctxlab builds
// (Debian's python3, no conda) would otherwise print errors into every log.
var condaActivate = fmt.Sprintf("if [ -f %[1]s ]; then source %[1]s && conda activate %[2]s; fi", condaActivateScript, condaEnv)

const condaActivateScript = "/opt/miniconda3/bin/activate"

// Eval is one eval script, in the harness's shape (make_eval_script_list_py in swebench/harness/test_spec/python.py):
// activate the environment, run the spec's eval commands, record the state, run the spec's install command, reset
// the test patch's files, apply the test patch, run the tests between the markers, record the test command's exit
// code (SWE-bench 5.0), reset the test files again. ctxlab's script also records how the setup (the eval and
// install commands) went, on the results channel, before the tests run.
type Eval struct {
	BaseCommit, TestPatch string
	// TestCmd is the whole test command, directives included.
	TestCmd string
	// Install and EvalCommands come from the harness spec, when there is one.
	Install      string
	EvalCommands []string
	// ResultsHelper says TestCmd loads ctxlab's Python results helper (withResultsHelper): the script writes the
	// helpers into a fresh folder just before the tests and gives the test command the results channel.
	ResultsHelper bool
}

// EvalScript is the eval script of a test command with no harness spec.
func EvalScript(baseCommit, testPatch, testCmd string) string {
	return Eval{BaseCommit: baseCommit, TestPatch: testPatch, TestCmd: testCmd}.Script()
}

// Script renders the eval script. Files the test patch modifies are checked out at base_commit before and after
// the tests, files it creates are removed (the harness's reset commands since its fix for new files).
//
// The script's stdout is the results channel and nothing else: it is moved to descriptor 3 at once, and stdout and
// stderr both go to the container's stderr, the log (one stream, so a marker never arrives before the output it
// follows). Every command but the test command runs with descriptor 3 closed; the test command keeps it only when
// it loads ctxlab's results helper, which takes it before any test module is imported. After the tests the script
// itself writes the test command's exit code to it (SWE-bench 5.0 records it in the log; printing cannot change
// it, so ctxlab reads it from the channel).
func (e Eval) Script() string {
	modified, created := resetFiles(e.TestPatch)
	var reset []string
	if len(modified) > 0 {
		reset = append(reset, "git checkout "+e.BaseCommit+" "+quoteAll(modified))
	}
	if len(created) > 0 {
		reset = append(reset, "rm -f "+quoteAll(created))
	}
	setup := len(e.EvalCommands) > 0 || strings.TrimSpace(e.Install) != ""
	lines := []string{"#!/bin/bash", "exec 3>&1 1>&2", "{", "set -uxo pipefail"}
	if setup {
		lines = append(lines, setupStatusVar+"=0", setupStepFunc)
	}
	lines = append(lines, condaActivate, "cd "+Testbed)
	lines = append(lines, trackSetup(e.EvalCommands)...)
	lines = append(lines,
		"git config --global --add safe.directory "+Testbed,
		"cd "+Testbed,
		"git status",
		"git show",
		"git -c core.fileMode=false diff "+e.BaseCommit,
		condaActivate,
	)
	if strings.TrimSpace(e.Install) != "" {
		lines = append(lines, trackSetup([]string{e.Install})...)
	}
	lines = append(lines, reset...)
	lines = append(lines, "git apply -v - <<'"+heredoc+"'\n"+strings.TrimRight(e.TestPatch, "\n")+"\n"+heredoc)
	testGroup := "} 3>&-"
	if e.ResultsHelper {
		lines = append(lines, writeHelpersLines()...)
		testGroup = "}"
	}
	lines = append(lines, "} 3>&-")
	if setup {
		lines = append(lines, `printf 'ctxlab1\tinstall\t%s\n' "$`+setupStatusVar+`" >&3`)
	}
	lines = append(lines, ": '"+StartTestOutput+"'")
	if e.ResultsHelper {
		lines = append(lines, "export "+resultsFDEnv+"=3 PYTHONPATH=\"$"+helperDirVar+"${PYTHONPATH:+:$PYTHONPATH}\"")
	}
	lines = append(lines, "{", e.TestCmd, testGroup,
		TestExitCodeVar+"=$?",
		`printf 'ctxlab1\texit\t%s\n' "$`+TestExitCodeVar+`" >&3`,
		": '"+EndTestOutput+"'",
		": '"+TestExitCode+"' \"$"+TestExitCodeVar+"\"",
		"exec 3>&-",
	)
	if e.ResultsHelper {
		lines = append(lines, "unset "+resultsFDEnv)
	}
	lines = append(lines, reset...)
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// The eval script keeps the setup's status in setupStatusVar: the first non-zero exit status among the eval and
// install commands, each checked after it ran (a list such as `a && b` fails as a whole), and every simple command
// in them checked by an ERR trap (`a; b` runs b after a failed).
const (
	setupStatusVar = "CTXLAB_SETUP_STATUS"
	setupStepFunc  = `ctxlab_setup_step() { if [ "$1" != 0 ] && [ "$` + setupStatusVar + `" = 0 ]; then ` +
		setupStatusVar + `=$1; fi; }`
)

// trackSetup are the eval script lines that run setup commands and keep their status (setupStatusVar).
func trackSetup(cmds []string) []string {
	if len(cmds) == 0 {
		return nil
	}
	lines := []string{"trap 'ctxlab_setup_step $?' ERR"}
	for _, c := range cmds {
		lines = append(lines, c, "ctxlab_setup_step $?")
	}
	return append(lines, "trap - ERR")
}

// writeHelpersLines are the eval script lines that write ctxlab's results helpers (the pytest plugin and the
// unittest runner) into a fresh folder, kept in $CTXLAB_HELPERS.
func writeHelpersLines() []string {
	lines := []string{helperDirVar + "=$(mktemp -d)"}
	for _, name := range []string{resultsPluginModule + ".py", unittestRunnerModule + ".py"} {
		b, err := pythonHelpers.ReadFile("python/" + name)
		if err != nil {
			panic(err) // embedded at build time
		}
		lines = append(lines, "cat > \"$"+helperDirVar+"/"+name+"\" <<'"+helperHeredoc+"'\n"+
			strings.TrimRight(string(b), "\n")+"\n"+helperHeredoc)
	}
	return lines
}

// withResultsHelper makes the last line of a test command load ctxlab's results helper, so that results are read
// from the channel, never from the log: `-p ctxlab_results` right after the words that run pytest (pytest,
// py.test, or PYTHON -m pytest, after any VAR=value words), or `-m ctxlab_unittest` for `-m unittest`. A command
// that runs neither itself (Django's runtests.py, sympy's bin/test, tox, a script), or whose words before the
// runner hold quotes, is returned as it is, with false: its log is parsed.
func withResultsHelper(cmd string) (string, bool) {
	head, last := "", cmd
	if i := strings.LastIndexByte(strings.TrimRight(cmd, "\n"), '\n'); i >= 0 {
		head, last = cmd[:i+1], cmd[i+1:]
	}
	type word struct {
		text     string
		end      int
		assigned bool
	}
	var words []word
	for i := 0; i < len(last); {
		for i < len(last) && (last[i] == ' ' || last[i] == '\t') {
			i++
		}
		start := i
		for i < len(last) && last[i] != ' ' && last[i] != '\t' {
			i++
		}
		if start == i {
			break
		}
		w := last[start:i]
		if strings.ContainsAny(w, "'\"\\$`;&|<>(){}") {
			break
		}
		words = append(words, word{w, i, strings.Contains(w, "=") && !strings.HasPrefix(w, "-")})
		if len(words) > 4 {
			break
		}
	}
	k := 0
	for k < len(words) && words[k].assigned {
		k++
	}
	insert := func(at int, text string) string { return head + last[:at] + text + last[at:] }
	switch {
	case k >= len(words):
	case slices.Contains([]string{"pytest", "py.test"}, path.Base(words[k].text)):
		return insert(words[k].end, " -p "+resultsPluginModule), true
	case k+2 < len(words) && strings.HasPrefix(path.Base(words[k].text), "python") && words[k+1].text == "-m":
		switch words[k+2].text {
		case "pytest":
			return insert(words[k+2].end, " -p "+resultsPluginModule), true
		case "unittest":
			at := words[k+2].end
			return head + last[:at-len("unittest")] + unittestRunnerModule + last[at:], true
		}
	}
	return cmd, false
}

// The results channel of a docker grade: a file of the grade's folder, on this side, created before the run and
// held open, into which the docker CLI writes what the eval script writes to its stdout (the container's descriptor
// 3: the helper's results and the script's record of the exit code), capped at channelCap bytes. The container
// never sees the file; the log is the CLI's stderr.
type resultsChannel struct {
	path string
	f    *os.File
}

const channelCap = 64 << 20

func newChannel(tmp string) (*resultsChannel, error) {
	p := filepath.Join(tmp, "channel")
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("docker results channel: %w", err)
	}
	w.Close()
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("docker results channel: %w", err)
	}
	return &resultsChannel{path: p, f: f}, nil
}

func (ch *resultsChannel) Close() error { return ch.f.Close() }

// command runs the eval script in the container, its stdout appended to the channel (capped) and its stderr left as
// the command's output.
func (ch *resultsChannel) command(bin, name string) []string {
	return []string{"/bin/sh", "-c", `"$0" exec "$1" /bin/bash /eval.sh | head -c ` + strconv.Itoa(channelCap) +
		` >>"$2"`, bin, name, ch.path}
}

// channelRecords are what a channel held: the helper's result lines, the test command's exit code when the
// script recorded one (the last record counts: the script writes it after the tests), and the setup's status (the
// first record counts: the script writes it before the tests).
type channelRecords struct {
	results   string
	exitCode  int
	exitKnown bool
	setup     setupStatus
}

func (ch *resultsChannel) read() (channelRecords, error) {
	var rec channelRecords
	b, err := io.ReadAll(io.LimitReader(ch.f, channelCap+1))
	if err != nil {
		return rec, fmt.Errorf("docker results channel: %w", err)
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		if code, ok := strings.CutPrefix(line, "ctxlab1\texit\t"); ok {
			if n, err := strconv.Atoi(code); err == nil {
				rec.exitCode, rec.exitKnown = n, true
			}
			continue
		}
		if code, ok := strings.CutPrefix(line, "ctxlab1\tinstall\t"); ok {
			if n, err := strconv.Atoi(code); err == nil && !rec.setup.known {
				rec.setup = setupStatus{code: n, known: true}
			}
			continue
		}
		if line != "" {
			keep = append(keep, line)
		}
	}
	rec.results = strings.Join(keep, "\n")
	return rec, nil
}

// noteHelperNeverStarted is the row's note for a run whose results helper never started.
const noteHelperNeverStarted = "the test runner never started ctxlab's results plugin, so no result was read " +
	"(results are never read from the output)"

// helperReport reads the helper's results: under a harness parser as the -rA summary lines they stand for
// (testlog.HarnessSummary), so names and statuses follow the harness's rules, else as ctxlab's local runner reads
// them (testlog.ParseResults).
func helperReport(parser, results string) (testlog.Report, string, error) {
	if p, ok := testlog.HarnessParser(parser); ok {
		summary, started, pytestOnly, err := testlog.HarnessSummary(strings.NewReader(results))
		if err != nil {
			return testlog.Report{}, "", err
		}
		if pytestOnly {
			if !started {
				return testlog.Report{Tests: map[string][]testlog.TestResult{}}, noteHelperNeverStarted, nil
			}
			rep, err := testlog.ParseHarness(p, strings.NewReader(summary))
			return rep, "", err
		}
	}
	rep, started, err := testlog.ParseResults(strings.NewReader(results))
	if !started {
		return testlog.Report{Tests: map[string][]testlog.TestResult{}}, noteHelperNeverStarted, err
	}
	return rep, "", err
}

// quoteAll joins paths for a command line, quoting those the shell would otherwise split or expand (the harness
// writes them bare).
func quoteAll(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = p
		if strings.IndexFunc(p, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./+-@%,:=", r))
		}) >= 0 {
			q[i] = shellQuote(p)
		}
	}
	return strings.Join(q, " ")
}

// shellQuote quotes a word for bash (test ids may hold brackets, spaces and quotes).
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '_'
	}, s)
}

var _ Executor = Docker{}

// Labels of grading containers: the machine and process of the grader, and its run (pid and process start time,
// so a reused pid is not taken for the grader that died).
const (
	labelHost = "ctxlab.host"
	labelPID  = "ctxlab.pid"
	labelRun  = "ctxlab.run"
)

// ContainerLabels are the docker create flags that label a container with this process (machine, pid, run), so
// that RemoveStaleContainers removes it once this process is gone; image builds label theirs the same way.
func ContainerLabels() []string {
	host, _ := os.Hostname()
	p := os.Getpid()
	return []string{"--label", labelHost + "=" + host, "--label", labelPID + "=" + strconv.Itoa(p),
		"--label", labelRun + "=" + runID(p)}
}

// runID names a process run: host, pid and the process's start time (clock ticks since boot, /proc/PID/stat).
func runID(pid int) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, pid, startTime(pid))
}

// startTime is field 22 of /proc/PID/stat ("" when the process is gone or /proc is missing).
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields after it follow its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// RemoveStaleContainers removes the grading containers of this machine whose grader process no longer runs (it
// was killed mid-grade, so its deferred removal never ran). It returns the names it removed.
func RemoveStaleContainers(ctx context.Context, bin string) ([]string, error) {
	if bin == "" {
		bin = "docker"
	}
	host, _ := os.Hostname()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ps := exec.CommandContext(cctx, bin, "ps", "-a", "--filter", "label="+labelHost+"="+host,
		"--format", `{{.Names}}	{{.Label "`+labelPID+`"}}	{{.Label "`+labelRun+`"}}`)
	ps.Env = dockerEnv()
	out, err := ps.Output()
	if err != nil {
		return nil, markDocker(fmt.Errorf("listing grading containers (docker ps): %w", err), out)
	}
	var removed []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil || runID(pid) == f[2] {
			continue // a live grader's (this one's included)
		}
		rm := exec.CommandContext(cctx, bin, "rm", "-f", "-v", f[0])
		rm.Env = dockerEnv()
		// Gone already, or being removed by another grader at the same time (graders run in parallel): either way
		// it goes.
		if out, err := rm.CombinedOutput(); err != nil && !strings.Contains(string(out), "No such container") &&
			!strings.Contains(string(out), "is already in progress") {
			return removed, fmt.Errorf("removing stale grading container %s: %w: %s", f[0], err, bytes.TrimSpace(out))
		}
		removed = append(removed, f[0])
	}
	return removed, nil
}
