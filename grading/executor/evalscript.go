package executor

import (
	"fmt"
	"path"
	"slices"
	"strings"
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
