package executor

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
	"ctxlab/patch/diff"
)

// HarnessSpec is how the SWE-bench harness tests one version of a repository: the part of
// MAP_REPO_VERSION_TO_SPECS (SWE-bench/SWE-bench, swebench/harness/constants/python.py) that the eval script uses
// (make_eval_script_list_py in swebench/harness/test_spec/python.py), and the repository's log parser
// (MAP_REPO_TO_PARSER_PY in swebench/harness/log_parsers/python.py). The environment parts (python, packages,
// pip_packages, pre_install) are baked into the instance images and not needed here.
type HarnessSpec struct {
	// TestCmd are the test commands; the test directives (TestDirectives) are appended to the last.
	TestCmd []string
	// Parser is a testlog parser name (testlog.ParserHarness*).
	Parser string
	// Install is the spec's install command, which the harness's eval script runs again before the tests (it
	// rebuilds compiled extensions a patch touched). Offline (--network none) a step that needs the network fails
	// and the script goes on, as the harness's does without set -e.
	Install string
	// EvalCommands run first (Django's locale settings).
	EvalCommands []string
}

// The harness's test commands (constants/python.py). TEST_PYTEST is assigned twice there; the later value, the one
// in effect, is "pytest -rA".
const (
	testPytest          = "pytest -rA"
	testAstropyPytest   = "pytest -rA -vv -o console_output_style=classic --tb=no"
	testDjango          = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
	testDjangoNoParalel = "./tests/runtests.py --verbosity 2"
	testSeaborn         = "pytest --no-header -rA"
	testSphinx          = "tox --current-env -epy39 -v --"
	testSympy           = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose"
)

var (
	// SPECS_DJANGO's eval_commands: 1.7 to 2.2 export a UTF-8 locale, 3.0 to 3.2 also generate it first.
	djangoLocaleOld = []string{"export LANG=en_US.UTF-8", "export LC_ALL=en_US.UTF-8", "export PYTHONIOENCODING=utf8",
		"export LANGUAGE=en_US:en"}
	djangoLocale3 = []string{"sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen", "export LANG=en_US.UTF-8",
		"export LANGUAGE=en_US:en", "export LC_ALL=en_US.UTF-8"}
)

const (
	pipEditable = "python -m pip install -e ."
	setupPy     = "python setup.py install"
)

// specGroup gives one spec to several versions of a repository; groups of a repository never share a version.
type specGroup struct {
	repo     string
	versions []string
	spec     HarnessSpec
}

func spec(cmd, parser, install string, eval ...string) HarnessSpec {
	return HarnessSpec{TestCmd: []string{cmd}, Parser: parser, Install: install, EvalCommands: eval}
}

// harnessGroups transcribes constants/python.py (SPECS_* by repository) for every repository of SWE-bench (full,
// Lite and Verified) whose spec has a test command.
var harnessGroups = []specGroup{
	// SPECS_ASTROPY
	{"astropy/astropy", []string{"3.0", "3.1", "3.2", "4.1", "4.2", "4.3", "5.0", "5.1", "5.2", "v5.3"},
		spec(testPytest, testlog.ParserHarnessPytestV2, "python -m pip install -e .[test] --verbose")},
	{"astropy/astropy", []string{"0.1", "0.2", "0.3", "0.4", "1.1", "1.2", "1.3"},
		spec(testAstropyPytest, testlog.ParserHarnessPytestV2, "python -m pip install -e .[test] --verbose")},
	// SPECS_DJANGO (1.9 runs without --settings and --parallel)
	{"django/django", []string{"1.7", "1.8", "1.10", "1.11", "2.0", "2.1", "2.2"},
		spec(testDjango, testlog.ParserHarnessDjango, setupPy, djangoLocaleOld...)},
	{"django/django", []string{"1.9"}, spec(testDjangoNoParalel, testlog.ParserHarnessDjango, setupPy, djangoLocaleOld...)},
	{"django/django", []string{"1.4", "1.5", "1.6"}, spec(testDjango, testlog.ParserHarnessDjango, setupPy)},
	{"django/django", []string{"3.0", "3.1", "3.2"}, spec(testDjango, testlog.ParserHarnessDjango, pipEditable, djangoLocale3...)},
	{"django/django", []string{"4.0", "4.1", "4.2", "5.0", "5.1", "5.2"}, spec(testDjango, testlog.ParserHarnessDjango, pipEditable)},
	// SPECS_MATPLOTLIB
	{"matplotlib/matplotlib", []string{"3.5", "3.6", "3.7", "3.0", "3.1", "3.2", "3.3", "3.4"},
		spec(testPytest, testlog.ParserHarnessMatplotlib, pipEditable)},
	{"matplotlib/matplotlib", []string{"3.8", "3.9"},
		spec(testPytest, testlog.ParserHarnessMatplotlib, `python -m pip install --no-build-isolation -e ".[dev]"`)},
	{"matplotlib/matplotlib", []string{"2.0", "2.1", "2.2", "1.0", "1.1", "1.2", "1.3", "1.4", "1.5"},
		spec(testPytest, testlog.ParserHarnessMatplotlib, "python setup.py build; python setup.py install")},
	// SPECS_SEABORN
	{"mwaskom/seaborn", []string{"0.11"}, spec(testSeaborn, testlog.ParserHarnessSeaborn, pipEditable)},
	{"mwaskom/seaborn", []string{"0.12", "0.13", "0.14"},
		spec(testSeaborn, testlog.ParserHarnessSeaborn, "python -m pip install -e .[dev]")},
	// SPECS_FLASK
	{"pallets/flask", []string{"2.0", "2.1", "2.2", "2.3", "3.0", "3.1"}, spec(testPytest, testlog.ParserHarnessPytest, pipEditable)},
	// SPECS_REQUESTS
	{"psf/requests", []string{"0.7", "0.8", "0.9", "0.11", "0.13", "0.14", "1.1", "1.2", "2.0", "2.2", "2.3", "2.4",
		"2.5", "2.7", "2.8", "2.9", "2.10", "2.11", "2.12", "2.17", "2.18", "2.19", "2.22", "2.26", "2.25", "2.27",
		"2.31", "3.0"}, spec(testPytest, testlog.ParserHarnessPytestOptions, "python -m pip install .")},
	// SPECS_XARRAY
	{"pydata/xarray", []string{"0.12", "0.18", "0.19", "0.20", "2022.03", "2022.06", "2022.09", "2023.07", "2024.05"},
		spec(testPytest, testlog.ParserHarnessPytest, pipEditable)},
	// SPECS_PYLINT
	{"pylint-dev/pylint", []string{"2.8", "2.9", "2.10", "2.11", "2.13", "2.14", "2.15", "2.16", "2.17", "3.0", "3.1",
		"3.2", "3.3", "4.0"}, spec(testPytest, testlog.ParserHarnessPytestOptions, pipEditable)},
	// SPECS_PYTEST
	{"pytest-dev/pytest", []string{"4.4", "4.5", "4.6", "5.0", "5.1", "5.2", "5.3", "5.4", "6.0", "6.2", "6.3", "7.0",
		"7.1", "7.2", "7.4", "8.0", "8.1", "8.2", "8.3", "8.4"}, spec(testPytest, testlog.ParserHarnessPytest, pipEditable)},
	// SPECS_SKLEARN. One revision of the table runs 0.20 to 0.22 with "pytest -v"; parse_log_pytest_v2 reads both
	// the -v progress lines and the -rA summary, so the choice does not change which names are found.
	{"scikit-learn/scikit-learn", []string{"0.20", "0.21", "0.22", "1.3", "1.4", "1.5", "1.6"},
		spec(testPytest, testlog.ParserHarnessPytestV2, "python -m pip install -v --no-use-pep517 --no-build-isolation -e .")},
	// SPECS_SPHINX (tox.ini was patched at build time to run pytest -rA)
	{"sphinx-doc/sphinx", []string{"1.5", "1.6", "1.7", "1.8", "2.0", "2.1", "2.2", "2.3", "2.4", "3.0", "3.1", "3.2",
		"3.3", "3.4", "3.5", "4.0", "4.1", "4.2", "4.3", "4.4", "4.5", "5.0", "5.1", "5.2", "5.3", "6.0", "6.2", "7.0",
		"7.1", "7.2", "7.3", "7.4", "8.0", "8.1"}, spec(testSphinx, testlog.ParserHarnessPytestV2, "python -m pip install -e .[test]")},
	// SPECS_SYMPY
	{"sympy/sympy", []string{"0.7", "1.0", "1.1", "1.2", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10", "1.11",
		"1.12", "1.13", "1.14"}, spec(testSympy, testlog.ParserHarnessSympy, pipEditable)},
	// SWE-bench (full and Lite) beyond Verified.
	{"marshmallow-code/marshmallow", []string{"2.18", "2.19", "2.20", "3.0", "3.1", "3.2", "3.4", "3.8", "3.9", "3.10",
		"3.11", "3.12", "3.13", "3.15", "3.16", "3.19"}, spec(testPytest, testlog.ParserHarnessPytest, "python -m pip install -e '.[dev]'")},
	{"pvlib/pvlib-python", []string{"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"},
		spec(testPytest, testlog.ParserHarnessPytest, "python -m pip install -e .[all]")},
	{"pydicom/pydicom", []string{"1.0", "1.1", "1.2", "1.3", "1.4", "2.0", "2.1", "2.2", "2.3", "2.4", "3.0"},
		spec(testPytest, testlog.ParserHarnessPytestOptions, pipEditable)},
	{"pylint-dev/astroid", []string{"2.5", "2.6", "2.7", "2.8", "2.9", "2.10", "2.12", "2.13", "2.14", "2.15", "2.16",
		"3.0"}, spec(testPytest, testlog.ParserHarnessPytest, pipEditable)},
	{"pyvista/pyvista", []string{"0.20", "0.21", "0.22", "0.23", "0.24", "0.25", "0.26", "0.27", "0.28", "0.29", "0.30",
		"0.31", "0.32", "0.33", "0.34", "0.35", "0.36", "0.37", "0.38", "0.39", "0.40", "0.41", "0.42", "0.43"},
		spec(testPytest, testlog.ParserHarnessPytest, pipEditable)},
	{"sqlfluff/sqlfluff", []string{"0.4", "0.5", "0.6", "0.8", "0.9", "0.10", "0.11", "0.12", "0.13", "1.0", "1.1",
		"1.2", "1.3", "1.4", "2.0", "2.1", "2.2"}, spec(testPytest, testlog.ParserHarnessPytest, pipEditable)},
}

// harnessTable is harnessGroups by repository and version.
var harnessTable = func() map[string]map[string]HarnessSpec {
	t := map[string]map[string]HarnessSpec{}
	for _, g := range harnessGroups {
		if t[g.repo] == nil {
			t[g.repo] = map[string]HarnessSpec{}
		}
		for _, v := range g.versions {
			if _, dup := t[g.repo][v]; dup {
				panic(fmt.Sprintf("harness table: %s %s is listed twice", g.repo, v))
			}
			t[g.repo][v] = g.spec
		}
	}
	return t
}()

// SWEbenchSpec is the harness's spec for a repository ("owner/name") at a dataset version ("3.0").
func SWEbenchSpec(repo, version string) (HarnessSpec, bool) {
	s, ok := harnessTable[repo][strings.TrimSpace(version)]
	return s, ok
}

// HarnessCoverage lists the table's repositories and, for each, its versions in the harness's order.
func HarnessCoverage() map[string][]string {
	out := map[string][]string{}
	for _, g := range harnessGroups {
		out[g.repo] = append(out[g.repo], g.versions...)
	}
	return out
}

// HarnessRepos lists the table's repositories, sorted.
func HarnessRepos() []string { return slices.Sorted(maps.Keys(harnessTable)) }

// InstanceSpec is the harness spec of an instance: a SWE-rebench row's own install_config (its test command, or
// else the table's for its repository and version, as SWE-rebench's fork of make_eval_script_list_py falls back),
// else SWE-bench's table for its repository and version. The source says which ("install_config", "table").
func InstanceSpec(in swebench.Instance) (HarnessSpec, string, bool) {
	table, inTable := SWEbenchSpec(in.Repo, in.Version)
	if cfg := in.InstallConfig; cfg != nil {
		s := HarnessSpec{TestCmd: slices.Clone([]string(cfg.TestCmd)), Install: cfg.Install,
			EvalCommands: slices.Clone(cfg.EvalCommands)}
		if len(s.TestCmd) == 0 {
			s.TestCmd = table.TestCmd
		}
		if len(s.TestCmd) == 0 {
			s.TestCmd = []string{testPytest}
		}
		// A parser ctxlab does not know is left to the command (parserFor).
		if p, ok := testlog.HarnessParser(cfg.LogParser); ok {
			s.Parser = p
		}
		return s, "install_config", true
	}
	if inTable {
		return table, "table", true
	}
	return HarnessSpec{}, "", false
}

// nonTestExts are NON_TEST_EXTS (swebench/harness/constants/__init__.py): files of a test patch that are no test
// directive. "csv" has no dot there, and is kept so.
var nonTestExts = []string{".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml"}

// TestDirectives are the harness's test arguments for an instance (get_test_directives in
// swebench/harness/test_spec/python.py, SWE-bench/SWE-bench at commit 54eecc0f): the files the test patch touches
// (the b/ names of its diff --git lines), in patch order, except data files (nonTestExts); for Django every one of
// them as a module: ".py" and a leading "tests/" cut, "/" as "." ("tests/admin_views/test_forms.py" becomes
// "admin_views.test_forms", "tests/x/models.py" "x.models"). No harness version filters Django's files further.
func TestDirectives(repo, testPatch string) []string {
	files, err := diff.Parse(testPatch)
	if err != nil {
		return nil
	}
	var out []string
	for _, f := range files {
		name := f.NewName
		if f.IsDelete {
			name = f.OldName // the harness reads the b/ name of the diff --git line, the old name for a deletion
		}
		if slices.ContainsFunc(nonTestExts, func(ext string) bool { return strings.HasSuffix(name, ext) }) {
			continue
		}
		if repo == "django/django" {
			name = strings.TrimSuffix(name, ".py")
			name = strings.TrimPrefix(name, "tests/")
			name = strings.ReplaceAll(name, "/", ".")
		}
		out = append(out, name)
	}
	return out
}

// resetFiles splits a test patch's files as the harness's eval script resets them (get_modified_files and
// get_new_files): files that exist at base_commit are checked out again, files the patch creates are removed.
func resetFiles(testPatch string) (modified, created []string) {
	files, err := diff.Parse(testPatch)
	if err != nil {
		return nil, nil
	}
	for _, f := range files {
		if f.IsNew {
			created = append(created, f.NewName)
		} else {
			modified = append(modified, f.OldName)
		}
	}
	return modified, created
}
