package executor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
	"ctxlab/patch/diff"
)

// The table covers every SWE-bench Verified repository at the versions its instances use.
func TestHarnessTableCoversVerified(t *testing.T) {
	verified := map[string][]string{
		"astropy/astropy":           {"1.3", "3.0", "3.1", "4.2", "4.3", "5.0", "5.1", "5.2", "v5.3"},
		"django/django":             {"3.0", "3.1", "3.2", "4.0", "4.1", "4.2", "5.0"},
		"matplotlib/matplotlib":     {"3.5", "3.6", "3.7"},
		"mwaskom/seaborn":           {"0.12", "0.13"},
		"pallets/flask":             {"2.3"},
		"psf/requests":              {"0.14", "1.2", "2.0", "2.3", "2.4", "2.5", "2.7", "2.8", "2.10", "2.12", "2.26"},
		"pydata/xarray":             {"0.12", "0.18", "0.19", "2022.03", "2022.06", "2022.09"},
		"pylint-dev/pylint":         {"2.8", "2.9", "2.10", "2.11", "2.13", "2.14", "2.15", "3.0"},
		"pytest-dev/pytest":         {"4.4", "4.5", "4.6", "5.0", "5.2", "5.3", "5.4", "6.0", "6.2", "6.3", "7.0", "7.2", "8.0"},
		"scikit-learn/scikit-learn": {"0.20", "0.21", "0.22", "1.3"},
		"sphinx-doc/sphinx":         {"3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "4.0", "4.1", "4.2", "4.3", "4.4", "5.0", "5.1", "5.2", "7.1", "7.2"},
		"sympy/sympy":               {"1.0", "1.1", "1.2", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10", "1.11", "1.12", "1.13"},
	}
	for repo, versions := range verified {
		for _, v := range versions {
			s, ok := SWEbenchSpec(repo, v)
			if !ok || len(s.TestCmd) == 0 || s.Parser == "" {
				t.Errorf("%s %s: %+v %v", repo, v, s, ok)
				continue
			}
			if p, ok := testlog.HarnessParser(repo); !ok || p != s.Parser {
				t.Errorf("%s %s: parser %s, the harness's is %s", repo, v, s.Parser, p)
			}
		}
	}
	for _, c := range []struct{ repo, version, cmd, install string }{
		{"django/django", "1.9", "./tests/runtests.py --verbosity 2", "python setup.py install"},
		{"django/django", "4.0", "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1", "python -m pip install -e ."},
		{"sympy/sympy", "1.12", "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose", "python -m pip install -e ."},
		{"sphinx-doc/sphinx", "7.1", "tox --current-env -epy39 -v --", "python -m pip install -e .[test]"},
		{"astropy/astropy", "1.3", "pytest -rA -vv -o console_output_style=classic --tb=no", "python -m pip install -e .[test] --verbose"},
		{"mwaskom/seaborn", "0.12", "pytest --no-header -rA", "python -m pip install -e .[dev]"},
		{"matplotlib/matplotlib", "3.8", "pytest -rA", `python -m pip install --no-build-isolation -e ".[dev]"`},
	} {
		s, ok := SWEbenchSpec(c.repo, c.version)
		if !ok || !slices.Equal(s.TestCmd, []string{c.cmd}) || s.Install != c.install {
			t.Errorf("%s %s: %+v", c.repo, c.version, s)
		}
	}
	if s, _ := SWEbenchSpec("django/django", "3.2"); !slices.Contains(s.EvalCommands, "export LANG=en_US.UTF-8") {
		t.Errorf("django 3.2 lacks the locale: %+v", s)
	}
	for _, miss := range [][2]string{{"django/django", "9.9"}, {"acme/calc", "1.0"}, {"django/django", ""}} {
		if s, ok := SWEbenchSpec(miss[0], miss[1]); ok {
			t.Errorf("%v: %+v", miss, s)
		}
	}
	if len(HarnessRepos()) != 18 || len(HarnessCoverage()["sympy/sympy"]) != 15 {
		t.Errorf("repos %v, sympy %v", HarnessRepos(), HarnessCoverage()["sympy/sympy"])
	}
}

// patchOf writes a git patch touching files: a new one for names starting with "+", a modification otherwise.
func patchOf(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		if name, ok := strings.CutPrefix(n, "+"); ok {
			b.WriteString(diff.Unified(name, nil, []byte("x = 1\n")))
			continue
		}
		b.WriteString(diff.Unified(n, []byte("x = 1\n"), []byte("x = 2\n")))
	}
	return b.String()
}

func TestTestDirectives(t *testing.T) {
	for _, c := range []struct {
		repo  string
		patch string
		want  []string
	}{
		// Django: every file but NON_TEST_EXTS, as a module (".py" and "tests/" cut, "/" as "."): get_test_directives
		// filters nothing else, so a patch touching only tests/x/models.py runs x.models, and a source or .po file
		// becomes a label too.
		{"django/django", patchOf("tests/admin_views/test_forms.py", "tests/i18n/tests.py",
			"tests/i18n/commands/locale/de/LC_MESSAGES/django.po", "tests/fixtures/data.json", "django/utils/text.py",
			"+tests/migrations/test_migrations_squashed/0001_initial.py"),
			[]string{"admin_views.test_forms", "i18n.tests", "i18n.commands.locale.de.LC_MESSAGES.django.po",
				"django.utils.text", "migrations.test_migrations_squashed.0001_initial"}},
		{"django/django", patchOf("tests/model_fields/models.py"), []string{"model_fields.models"}},
		// sympy and pytest repositories: the files, in patch order, without NON_TEST_EXTS.
		{"sympy/sympy", patchOf("sympy/core/tests/test_basic.py", "sympy/printing/tests/test_latex.py", "doc/notes.md"),
			[]string{"sympy/core/tests/test_basic.py", "sympy/printing/tests/test_latex.py"}},
		{"psf/requests", patchOf("tests/test_requests.py", "tests/data.csv", "+tests/testserver/server.py"),
			[]string{"tests/test_requests.py", "tests/testserver/server.py"}},
	} {
		if got := TestDirectives(c.repo, c.patch); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.repo, got, c.want)
		}
	}
}

func TestInstanceSpecAndImage(t *testing.T) {
	in := calcInstance()
	in.Repo, in.Version = "django/django", "4.1"
	s, source, ok := InstanceSpec(in)
	if !ok || source != "table" || s.Parser != testlog.ParserHarnessDjango {
		t.Fatalf("table: %+v %s %v", s, source, ok)
	}
	// A SWE-rebench row's install_config wins over the table; without a command it takes the table's.
	in.InstallConfig = &swebench.InstallConfig{TestCmd: swebench.TestCommands{"pytest -x -rA"}, LogParser: "parse_log_pytest_v2",
		Install: "pip install -e ."}
	s, source, _ = InstanceSpec(in)
	if source != "install_config" || !slices.Equal(s.TestCmd, []string{"pytest -x -rA"}) ||
		s.Parser != testlog.ParserHarnessPytestV2 || s.Install != "pip install -e ." {
		t.Errorf("install_config: %+v %s", s, source)
	}
	in.InstallConfig = &swebench.InstallConfig{LogParser: "django/django"}
	if s, _, _ = InstanceSpec(in); !slices.Equal(s.TestCmd, []string{testDjango}) || s.Parser != testlog.ParserHarnessDjango {
		t.Errorf("install_config without a command: %+v", s)
	}
	in.Repo, in.Version = "acme/calc", ""
	in.InstallConfig = nil
	if _, _, ok := InstanceSpec(in); ok {
		t.Error("a repository outside the table has a spec")
	}

	// The row's own image, else the namespace's name for the id.
	if got := ImageOf("swerebench", in); got != "swerebench/sweb.eval.x86_64.acme_1776_calc-1:latest" {
		t.Errorf("derived image %s", got)
	}
	in.Image = "swerebench/sweb.eval.x86_64.acme_1776_calc-1:v2"
	if got := ImageOf("swebench", in); got != in.Image {
		t.Errorf("row image %s", got)
	}
}

func TestEvalPlanChoice(t *testing.T) {
	in := calcInstance()
	in.Repo, in.Version = "django/django", "3.0"
	in.TestPatch = patchOf("tests/utils_tests/test_text.py", "tests/utils_tests/files/strip_tags1.html")
	p := evalPlan(Request{Instance: in, Config: Config{Tests: TestsListed}}, LangPython)
	// The .html fixture is no NON_TEST_EXTS file: the harness passes it on as a label too.
	want := testDjango + " utils_tests.test_text utils_tests.files.strip_tags1.html"
	if p.Cmd != want || p.Parser != testlog.ParserHarnessDjango || p.Source != "table" || p.Install != pipEditable ||
		!slices.Equal(p.EvalCommands, djangoLocale3) {
		t.Errorf("django 3.0 (listed does not apply): %+v", p)
	}
	// The spec's own command and parser win over the table.
	p = evalPlan(Request{Instance: in, Config: Config{TestCmds: map[string]string{"django/django": "python -m pytest"},
		LogParser: testlog.ParserPytest}}, LangPython)
	if p.Cmd != "python -m pytest tests/utils_tests/test_text.py" || p.Parser != testlog.ParserPytest || p.Install != "" {
		t.Errorf("config command: %+v", p)
	}
	// A command list runs in order; the directives go to the last command.
	in.Repo, in.Version = "acme/tool", "1.0"
	in.TestPatch = patchOf("tests/test_x.py")
	in.InstallConfig = &swebench.InstallConfig{TestCmd: swebench.TestCommands{"make build", "pytest -rA"},
		LogParser: "parse_log_pytest"}
	if p = evalPlan(Request{Instance: in}, LangPython); p.Cmd != "make build\npytest -rA tests/test_x.py" ||
		p.Parser != testlog.ParserHarnessPytest || p.Source != "install_config" {
		t.Errorf("command list: %+v", p)
	}
	// An unknown parser name leaves the choice to the command.
	in.InstallConfig.LogParser = "parse_log_something_new"
	if p = evalPlan(Request{Instance: in}, LangPython); p.Parser != testlog.ParserPytest {
		t.Errorf("unknown parser: %+v", p)
	}
}

// The eval script activates conda only where the image has it, runs the spec's eval and install commands before
// the tests, and removes the test files the test patch creates instead of checking them out.
func TestEvalScriptShape(t *testing.T) {
	e := Eval{BaseCommit: "abc", TestPatch: patchOf("tests/test_a.py", "+tests/test new.py"), TestCmd: "pytest -rA",
		Install: "python -m pip install -e .", EvalCommands: []string{"export LANG=en_US.UTF-8"}}
	script := e.Script()
	for _, want := range []string{
		"if [ -f /opt/miniconda3/bin/activate ]; then source /opt/miniconda3/bin/activate && conda activate testbed; fi\ncd /testbed\n" +
			"trap 'ctxlab_setup_step $?' ERR\nexport LANG=en_US.UTF-8\nctxlab_setup_step $?\ntrap - ERR\n",
		"git -c core.fileMode=false diff abc\nif [ -f /opt/miniconda3/bin/activate ]; then source /opt/miniconda3/bin/activate && conda activate testbed; fi\n" +
			"trap 'ctxlab_setup_step $?' ERR\npython -m pip install -e .\nctxlab_setup_step $?\ntrap - ERR\n" +
			"git checkout abc tests/test_a.py\nrm -f 'tests/test new.py'\ngit apply -v - <<'EOF_114329324912'\n",
		// The results channel: the script's stdout becomes descriptor 3, closed for every command but the tests
		// (which, loading no helper here, do not get it either); the setup's status is recorded before the tests,
		// the exit code after them, before the reset.
		"#!/bin/bash\nexec 3>&1 1>&2\n{\nset -uxo pipefail\nCTXLAB_SETUP_STATUS=0\n",
		"\n} 3>&-\nprintf 'ctxlab1\\tinstall\\t%s\\n' \"$CTXLAB_SETUP_STATUS\" >&3\n: '>>>>> Start Test Output'\n{\npytest -rA\n} 3>&-\nSWEBENCH_TEST_EXIT_CODE=$?\n" +
			"printf 'ctxlab1\\texit\\t%s\\n' \"$SWEBENCH_TEST_EXIT_CODE\" >&3\n: '>>>>> End Test Output'\n" +
			": '>>>>> Test Exit Code' \"$SWEBENCH_TEST_EXIT_CODE\"\nexec 3>&-\ngit checkout abc tests/test_a.py\nrm -f 'tests/test new.py'\n",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if strings.Contains(script, "\nsource /opt/miniconda3") || strings.Contains(script, "\nconda activate") {
		t.Errorf("an unguarded conda line:\n%s", script)
	}
	// In an image without conda (ctxlab's), the guard prints nothing: bash runs the script's first lines cleanly.
	dir := t.TempDir()
	head := "#!/bin/bash\nset -uo pipefail\n" + condaActivate + "\necho ready\n"
	f := filepath.Join(dir, "head.sh")
	if err := os.WriteFile(f, []byte(head), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(condaActivateScript); err == nil {
		t.Skip("this machine has conda at " + condaActivateScript)
	}
	out, err := runBash(t, f)
	if err != nil || out != "ready\n" {
		t.Errorf("guarded activation printed %q (%v)", out, err)
	}
}

// The eval script's record of the setup, run by bash: the first non-zero status among the eval and install
// commands, whether a command fails alone, first in an && list, or before another in a ; sequence; 0 when each
// succeeds. Variables the commands export stay set for the tests.
func TestEvalScriptSetupStatus(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct {
		cmds []string
		want string
	}{
		{[]string{"true", "export CTXLAB_X=1"}, "0 1"},
		{[]string{"false && true", "export CTXLAB_X=1"}, "1 1"},
		{[]string{"true; (exit 3); true", "(exit 4)", "export CTXLAB_X=1"}, "3 1"},
		{[]string{"export CTXLAB_X=1", "ctxlab-no-such-command install x"}, "127 1"},
	} {
		lines := append([]string{"set -uo pipefail", setupStatusVar + "=0", setupStepFunc}, trackSetup(c.cmds)...)
		lines = append(lines, `echo "$`+setupStatusVar+` $CTXLAB_X"`)
		f := filepath.Join(dir, fmt.Sprint(i, ".sh"))
		if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := runBash(t, f)
		if got := strings.TrimSpace(out[strings.LastIndexByte(strings.TrimSpace(out), '\n')+1:]); err != nil || got != c.want {
			t.Errorf("%q: got %q (%v), want %q\n%s", c.cmds, got, err, c.want, out)
		}
	}
}

// A Django instance graded through the table end to end (the fake docker replays a runtests.py log): the eval
// script runs runtests.py on the module directives with the locale exports, and the Django parser's names decide.
func TestDockerGradesThroughTable(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	in := calcInstance()
	in.InstanceID, in.Repo, in.Version = "django__django-99999", "django/django", "3.1"
	in.FailToPass = []string{"test_add (calc_tests.test_calc.CalcTests)"}
	in.PassToPass = []string{"test_mul_zero (calc_tests.test_calc.CalcTests)", "Multiplying by zero gives zero."}
	log := "+ : '" + StartTestOutput + "'\n" +
		"Testing against Django installed in '/testbed/django'\nImporting application calc_tests\n" +
		"test_add (calc_tests.test_calc.CalcTests) ... ok\n" +
		"test_mul_zero (calc_tests.test_calc.CalcTests) ... ok\n" +
		"Multiplying by zero gives zero. ... ok\n" +
		"\n----------------------------------------------------------------------\nRan 3 tests in 0.002s\n\nOK\n" +
		"+ : '" + EndTestOutput + "'\n"
	f := newFakeDocker(t, replay{log: log}, false)
	res, err := Docker{}.Run(context.Background(), Request{Instance: in, Patch: in.Patch, Timeout: time.Minute,
		Config: Config{Docker: f.bin}})
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); !v.Resolved {
		t.Errorf("not resolved: %+v\n%s", v, res.Output)
	}
	script, _ := os.ReadFile(filepath.Join(f.root, "eval.sh"))
	for _, want := range []string{"export LC_ALL=en_US.UTF-8\n", "\npython -m pip install -e .\n",
		"\n" + testDjango + " test_calc\n"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("eval.sh lacks %q:\n%s", want, script)
		}
	}
	// Under ctxlab's own pytest parser the same log names nothing: the table's parser did the reading.
	rep, _ := testlog.Parse(testlog.ParserPytest, strings.NewReader(log))
	if testlog.Decide(in.FailToPass, in.PassToPass, rep).Resolved {
		t.Error("the pytest parser resolves a Django log")
	}
}

// A SWE-rebench row: its own image is the one created, its own command runs.
func TestDockerUsesRowImageAndCommand(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	in := calcInstance()
	in.Image = "swerebench/sweb.eval.x86_64.acme_1776_calc-1"
	in.InstallConfig = &swebench.InstallConfig{TestCmd: swebench.TestCommands{"pytest --no-header -rA --tb=no -p no:cacheprovider"},
		LogParser: "parse_log_pytest"}
	f := newFakeDocker(t, realLog(t, in, in.Patch), false)
	res, err := Docker{}.Run(context.Background(), Request{Instance: in, Patch: in.Patch, Timeout: time.Minute,
		Config: Config{Docker: f.bin, Namespace: "ctxlabdemo"}})
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); !v.Resolved {
		t.Errorf("not resolved: %+v\n%s", v, res.Output)
	}
	var created []string
	for _, c := range f.calls(t) {
		if c.Args[0] == "create" {
			created = c.Args
		}
	}
	if !slices.Contains(created, in.Image) {
		t.Errorf("create %v does not use the row's image %s", created, in.Image)
	}
	script, _ := os.ReadFile(filepath.Join(f.root, "eval.sh"))
	if !strings.Contains(string(script), "\npytest -p ctxlab_results --no-header -rA --tb=no -p no:cacheprovider tests/test_calc.py\n") {
		t.Errorf("eval.sh does not run the row's command:\n%s", script)
	}
}

func runBash(t *testing.T, script string) (string, error) {
	t.Helper()
	out, err := exec.Command("bash", script).CombinedOutput()
	return string(out), err
}

// The docker executor's test commands load ctxlab's results helper where they run pytest or unittest themselves,
// on the last line, whatever precedes the runner (variables, a path, python -m), and leave every other command's
// words (and the directives after it) as they are.
func TestWithResultsHelper(t *testing.T) {
	for _, c := range []struct {
		cmd, want string
		helped    bool
	}{
		{"pytest -rA tests/a.py", "pytest -p ctxlab_results -rA tests/a.py", true},
		{testAstropyPytest + " 'tests/a b.py::t[x y]'", "pytest -p ctxlab_results -rA -vv -o console_output_style=classic --tb=no 'tests/a b.py::t[x y]'", true},
		{"PYTHONWARNINGS=ignore /usr/bin/py.test -x", "PYTHONWARNINGS=ignore /usr/bin/py.test -p ctxlab_results -x", true},
		{"python3 -m pytest -q", "python3 -m pytest -p ctxlab_results -q", true},
		{"export A=1\npython -m unittest -v tests.test_a", "export A=1\npython -m ctxlab_unittest -v tests.test_a", true},
		{"pip install -e .\npytest tests", "pip install -e .\npytest -p ctxlab_results tests", true},
		{testDjango + " admin_views.tests", testDjango + " admin_views.tests", false},
		{testSympy + " sympy/core/tests/test_x.py", testSympy + " sympy/core/tests/test_x.py", false},
		{testSphinx + " tests/test_x.py", testSphinx + " tests/test_x.py", false},
		{"go test -json ./...", "go test -json ./...", false},
		{"A='x y' pytest", "A='x y' pytest", false}, // quotes before the runner: not read, left alone
		{"bash -c 'pytest -rA'", "bash -c 'pytest -rA'", false},
	} {
		got, helped := withResultsHelper(c.cmd)
		if got != c.want || helped != c.helped {
			t.Errorf("%q: %q (%v), want %q (%v)", c.cmd, got, helped, c.want, c.helped)
		}
	}
}
