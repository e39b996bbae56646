package executor

import (
	"archive/zip"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
	"ctxlab/patch/diff"
)

// Issue 38, item 4: a row's install_config (or the spec's grading.install_config) is the environment the local
// executor grades in: its test command and log parser (unittest names, not the default pytest's), its eval
// commands (variables), the install of the repository itself (a src layout importable, as pip install -e . makes
// it). The gold patch resolves, no fix does not, printed results count for nothing.
func TestLocalInstallConfig(t *testing.T) {
	python(t)
	t.Setenv("TMPDIR", t.TempDir())
	in, files := srcLayout()
	files["tests/test_lang.py"] = "import os\nimport unittest\n\n\nclass TestLang(unittest.TestCase):\n" +
		"    def test_lang(self):\n        self.assertEqual(os.environ.get('LANG'), 'C.UTF-8')\n"
	in.PassToPass = []string{"test_lang (tests.test_lang.TestLang)"}
	in.TestPatch += diff.Unified("tests/test_lang.py", []byte(files["tests/test_lang.py"]),
		[]byte(files["tests/test_lang.py"]+"\n# touched\n"))
	cfg := swebench.InstallConfig{TestCmd: swebench.TestCommands{"python -m unittest -v"}, Install: "pip install -e .",
		EvalCommands: swebench.StringList{"export LANG=C.UTF-8"}, LogParser: "parse_log_django", Python: "3"}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	noFix := diff.Unified("README.md", []byte(files["README.md"]), []byte("calc!\n"))
	forged := diff.Unified("src/calc/ops.py", []byte(files["src/calc/ops.py"]), []byte(printedForgery))
	wrapped := cfg
	wrapped.TestCmd = swebench.TestCommands{`bash -c "cd . && python3 -m unittest -v tests.test_add tests.test_lang"`}
	for _, c := range []struct {
		name string
		row  *swebench.InstallConfig
		spec json.RawMessage
	}{
		{"row's install_config", &cfg, nil},
		{"spec's grading.install_config", nil, raw},
		{"test command in bash -c", &wrapped, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			row := in
			row.InstallConfig = c.row
			for _, p := range []struct {
				patch string
				want  bool
			}{{in.Patch, true}, {noFix, false}, {forged, false}} {
				res, err := Local{}.Run(context.Background(), Request{Instance: row, Patch: p.patch,
					Materialize: materializer(files), Timeout: 2 * time.Minute,
					Config: Config{InstallConfig: c.spec}})
				if err != nil {
					t.Fatal(err)
				}
				v := decide(row, res)
				// The forgery ends the run before any result: its tests are missing, not passed.
				if v.Resolved != p.want || p.patch != forged && len(v.Missing) > 0 || strings.Contains(res.Note, "never started") {
					t.Errorf("resolved %v, want %v: %+v, note %q\n%s", v.Resolved, p.want, v, res.Note, res.Output)
				}
			}
		})
	}
}

// What the environment needs and the machine lacks fails the grade as the environment's (errkind
// PythonEnvironment), naming what to install, never as the model's: a Debian package of pre_install, a Python
// package of pip_packages, and a module the tests import that neither the repository holds nor the patch imports.
// A module only the model patch imports is the model's mistake: graded, unresolved.
func TestLocalEnvironmentFailures(t *testing.T) {
	python(t)
	t.Setenv("TMPDIR", t.TempDir())
	in, files := srcLayout()
	base := swebench.InstallConfig{TestCmd: swebench.TestCommands{"python -m unittest -v"}, Install: "pip install -e ."}
	needs := func(f func(*swebench.InstallConfig)) *swebench.InstallConfig {
		c := base
		f(&c)
		return &c
	}
	lacksDep := in
	lacksDep.TestPatch = diff.Unified("tests/test_add.py", nil, []byte("import unittest\n\nimport ctxlab_no_such_dep\n"+
		"from calc.ops import add\n\n\nclass TestAdd(unittest.TestCase):\n    def test_add(self):\n"+
		"        self.assertEqual(add(2, 3), 5)\n"))
	for _, c := range []struct {
		name, patch, want string
		in                swebench.Instance
		cfg               *swebench.InstallConfig
	}{
		{"Debian package", in.Patch, "apt-get install -y ctxlab-no-such-deb", in,
			needs(func(c *swebench.InstallConfig) {
				c.PreInstall = swebench.StringList{"apt-get update && apt-get install -y ctxlab-no-such-deb"}
			})},
		{"pip package", in.Patch, "ctxlab-no-such-package", in,
			needs(func(c *swebench.InstallConfig) { c.PipPackages = swebench.StringList{"ctxlab-no-such-package>=1"} })},
		{"module the tests import", in.Patch, "could not import ctxlab_no_such_dep", lacksDep, &base},
	} {
		t.Run(c.name, func(t *testing.T) {
			row := c.in
			row.InstallConfig = c.cfg
			_, err := Local{}.Run(context.Background(), Request{Instance: row, Patch: c.patch,
				Materialize: materializer(files), Timeout: 2 * time.Minute})
			if k, _ := errkind.KindOf(err); k != errkind.PythonEnvironment || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v (kind %q), want the environment's failure naming %q", err, k, c.want)
			}
		})
	}
	// The model patch imports a module nobody has: its own mistake, graded.
	row := in
	row.InstallConfig = &base
	patch := diff.Unified("src/calc/ops.py", []byte(files["src/calc/ops.py"]),
		[]byte("import ctxlab_no_such_dep\n\n\ndef add(a, b):\n    return a + b\n"))
	res, err := Local{}.Run(context.Background(), Request{Instance: row, Patch: patch,
		Materialize: materializer(files), Timeout: 2 * time.Minute})
	if err != nil || !res.Ran || decide(row, res).Resolved {
		t.Errorf("a module the patch imports: err %v, ran %v, %+v", err, res.Ran, decide(row, res))
	}
}

// TestLocalPatchCannotBlameTheEnvironment: a model patch that raises ModuleNotFoundError for a name it never
// imports (a made-up module) shows the sign of a lacking environment; the grade without the model patch shows no
// such thing, so the failure stays the model's (graded, unresolved), not python_environment, which a re-run would
// retry and a report would not count against the model.
func TestLocalPatchCannotBlameTheEnvironment(t *testing.T) {
	python(t)
	t.Setenv("TMPDIR", t.TempDir())
	in, files := srcLayout()
	row := in
	row.InstallConfig = &swebench.InstallConfig{TestCmd: swebench.TestCommands{"python -m unittest -v"},
		Install: "pip install -e ."}
	patch := diff.Unified("src/calc/ops.py", []byte(files["src/calc/ops.py"]),
		[]byte("raise ModuleNotFoundError(\"No module named 'ctxlab_made_up'\", name='ctxlab_made_up')\n"))
	res, err := Local{}.Run(context.Background(), Request{Instance: row, Patch: patch,
		Materialize: materializer(files), Timeout: 2 * time.Minute})
	if err != nil || !res.Ran || decide(row, res).Resolved {
		t.Errorf("a patch raising a missing module: err %v, ran %v, %+v", err, res.Ran, decide(row, res))
	}
}

// writeWheel writes a wheel of a one-module distribution into dir, as pip builds them (PEP 427).
func writeWheel(t *testing.T, dir, name, module string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name+"-1.0-py3-none-any.whl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z := zip.NewWriter(f)
	info := name + "-1.0.dist-info/"
	files := map[string]string{
		name + ".py":           module,
		info + "METADATA":      "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n",
		info + "WHEEL":         "Wheel-Version: 1.0\nGenerator: ctxlab-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		info + "top_level.txt": name + "\n",
	}
	record := ""
	for _, n := range []string{name + ".py", info + "METADATA", info + "WHEEL", info + "top_level.txt"} {
		w, err := z.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
		record += n + ",,\n"
	}
	w, err := z.Create(info + "RECORD")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(record + info + "RECORD,,\n")); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
}

// A requirement the machine lacks is installed offline from the researcher's wheel folder (grading.python_wheels)
// into a virtual environment of PythonEnvsDir, made once and kept by content, which the tests run in.
func TestLocalEnvironmentFromWheels(t *testing.T) {
	python(t)
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	wheels := t.TempDir()
	writeWheel(t, wheels, "ctxlabwheel", "def three():\n    return 3\n")
	in, files := srcLayout()
	files = maps.Clone(files)
	in.TestPatch = diff.Unified("tests/test_add.py", nil, []byte("import unittest\n\nfrom ctxlabwheel import three\n"+
		"from calc.ops import add\n\n\nclass TestAdd(unittest.TestCase):\n    def test_add(self):\n"+
		"        self.assertEqual(add(2, 1), three())\n"))
	in.InstallConfig = &swebench.InstallConfig{TestCmd: swebench.TestCommands{"python -m unittest -v"},
		Install: "pip install -e .", PipPackages: swebench.StringList{"ctxlabwheel==1.0"}}
	for range 2 {
		res, err := Local{}.Run(context.Background(), Request{Instance: in, Patch: in.Patch,
			Materialize: materializer(files), Timeout: 2 * time.Minute, Config: Config{PythonWheels: wheels}})
		if err != nil {
			t.Fatal(err)
		}
		if v := decide(in, res); !v.Resolved {
			t.Errorf("%+v %s\n%s", v, res.Note, res.Output)
		}
	}
	envs, err := PythonEnvsDir()
	if err != nil {
		t.Fatal(err)
	}
	made, _ := filepath.Glob(filepath.Join(envs, "*", ".ctxlab-complete"))
	if len(made) != 1 {
		t.Errorf("environments made: %v, want one, made once", made)
	}
}

// The spec's grading.install_config is one statement of the environment for both executors: the docker executor's
// eval script runs its test command, eval commands and install for a row that states none, and a row's own wins.
func TestDockerEvalPlanReadsSpecEnvironment(t *testing.T) {
	in, _ := srcLayout()
	raw := json.RawMessage(`{"test_cmd":"python -m unittest -v","install":"pip install -e .","eval_commands":["export LANG=C.UTF-8"],"log_parser":"parse_log_django"}`)
	p := evalPlan(Request{Instance: in, Config: Config{InstallConfig: raw}}, LangPython)
	if p.Source != "install_config" || !strings.HasPrefix(p.Cmd, "python -m unittest -v tests/test_add.py") ||
		p.Install != "pip install -e ." || len(p.EvalCommands) != 1 || p.Parser != "parse_log_django" {
		t.Errorf("plan = %+v", p)
	}
	in.InstallConfig = &swebench.InstallConfig{TestCmd: swebench.TestCommands{"pytest -rA"}}
	if p := evalPlan(Request{Instance: in, Config: Config{InstallConfig: raw}}, LangPython); !strings.HasPrefix(p.Cmd, "pytest -rA ") {
		t.Errorf("the row's own install_config does not win: %+v", p)
	}
}

// A test file that fails to collect is an error under its own id, as pytest's -rA summary lists it (ERROR
// tests/test_calc.py), and the module it could not import is named: ctxlab_results records both from its one
// collection hook.
func TestPytestCollectionErrorRecorded(t *testing.T) {
	python(t)
	t.Setenv("TMPDIR", t.TempDir())
	in := calcInstance()
	in.TestPatch = diff.Unified("tests/test_calc.py", []byte(calcBase["tests/test_calc.py"]),
		[]byte("import ctxlab_no_such_module\n"+calcBase["tests/test_calc.py"]))
	res, err := Local{}.Run(context.Background(), Request{Instance: in, Patch: in.Patch,
		Materialize: materializer(calcBase), Timeout: 2 * time.Minute})
	if k, _ := errkind.KindOf(err); k != errkind.PythonEnvironment {
		t.Errorf("err = %v, want the environment's failure", err)
	}
	if rs := res.Report.Tests["tests/test_calc.py"]; len(rs) != 1 || rs[0].Status != testlog.StatusFail {
		t.Errorf("the file that failed to collect: %+v, want one failure", rs)
	}
	if !slices.Equal(res.Report.MissingModules, []string{"ctxlab_no_such_module"}) {
		t.Errorf("missing modules %v", res.Report.MissingModules)
	}
}
