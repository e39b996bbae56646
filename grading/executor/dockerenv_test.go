package executor

import (
	"context"
	"strings"
	"testing"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/dataset/swebench"
	"ctxlab/patch/diff"
)

// dockerEnvironmentSubtests grade rows whose environment fails in the docker executor, in the image of py (the
// calc repository that TestDockerEngine builds; each row names it as its own image), side by side. What the image
// lacks is the environment's failure (errkind.PythonEnvironment), as in the local executor
// (TestLocalEnvironmentFailures), never the model's: a package the row's install_config installs, a module the
// tests import, an install that fails without the model patch too. What the model patch itself breaks stays the
// model's: a module only it imports, and an install its own code makes fail.
func dockerEnvironmentSubtests(t *testing.T, cfg Config, py swebench.Instance) {
	image := InstanceImage(engineNamespace, py.InstanceID)
	row := func(id string) swebench.Instance {
		in := py
		in.InstanceID, in.Image = "acme__calc-env-"+id, image
		return in
	}
	grade := func(t *testing.T, in swebench.Instance, patch string) (Result, error) {
		t.Helper()
		return Docker{}.Run(context.Background(), Request{Instance: in, Patch: patch, Timeout: 5 * time.Minute,
			Config: cfg})
	}
	environments := func(t *testing.T, in swebench.Instance, res Result, err error, want ...string) {
		t.Helper()
		k, _ := errkind.KindOf(err)
		if k != errkind.PythonEnvironment {
			t.Fatalf("gold: err %v (kind %q), verdict %+v, note %q; want the environment's failure\n%s", err, k,
				decide(in, res), res.Note, res.Output)
		}
		t.Logf("gold: %v", err)
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("err = %v, want it to name %q", err, w)
			}
		}
	}
	models := func(t *testing.T, in swebench.Instance, res Result, err error) {
		t.Helper()
		if err != nil || !res.Ran || decide(in, res).Resolved {
			t.Fatalf("err %v, ran %v, %+v; want a graded, unresolved run (the model's)\n%s", err, res.Ran,
				decide(in, res), res.Output)
		}
		t.Logf("the model's: %+v, note %q", decide(in, res), res.Note)
	}
	// The test patch of py with an import line at its top.
	importing := func(module string) string {
		return diff.Unified("tests/test_calc.py", []byte(calcBase["tests/test_calc.py"]),
			[]byte("import "+module+"\n"+enginePythonTests))
	}

	t.Run("PackagesTheInstallConfigInstallsAndTheImageLacks", func(t *testing.T) {
		t.Parallel()
		in := row("packages")
		in.InstallConfig = &swebench.InstallConfig{Install: "pip install ctxlab-no-such-package",
			PreInstall: swebench.StringList{"apt-get update && apt-get install -y ctxlab-no-such-deb"}}
		res, err := grade(t, in, in.Patch)
		environments(t, in, res, err, "ctxlab-no-such-package", "ctxlab-no-such-deb")
	})
	t.Run("ModuleTheTestsImportAndTheImageLacks", func(t *testing.T) {
		t.Parallel()
		in := row("module")
		in.TestPatch = importing("ctxlab_no_such_module")
		res, err := grade(t, in, in.Patch)
		environments(t, in, res, err, "ctxlab_no_such_module")
	})
	t.Run("ModuleOnlyThePatchImportsIsTheModels", func(t *testing.T) {
		t.Parallel()
		in := row("patch-module")
		patch := diff.Unified("calc/ops.py", []byte(calcBase["calc/ops.py"]), []byte("import ctxlab_no_such_module\n"+
			strings.Replace(calcBase["calc/ops.py"], "a - b", "a + b", 1)))
		res, err := grade(t, in, patch)
		models(t, in, res, err)
	})
	t.Run("InstallThatFailsWithoutThePatchToo", func(t *testing.T) {
		t.Parallel()
		// The row's install of the repository fails (it is no Python project pip can install) and its tests, run
		// by the pytest script in importlib mode, import the repository only when installed: no test runs.
		in := row("install")
		in.InstallConfig = &swebench.InstallConfig{Install: "python -m pip install -e .",
			TestCmd: swebench.TestCommands{"pytest -rA --import-mode=importlib"}}
		res, err := grade(t, in, in.Patch)
		environments(t, in, res, err, "exited 1")
	})
	t.Run("InstallThePatchBreaksIsTheModels", func(t *testing.T) {
		t.Parallel()
		// The install runs `python -m pip`, which the model's pip.py at the repository's root stands in for: it
		// deletes a module of the standard library that the tests import, and fails. With the patch the install
		// fails and the tests cannot import the module; without it neither happens.
		in := row("hostile-install")
		in.InstallConfig = &swebench.InstallConfig{Install: "python -m pip --version"}
		in.TestPatch = importing("colorsys")
		patch := in.Patch + diff.Unified("pip.py", nil,
			[]byte("import os\nimport sys\n\nos.remove('/usr/lib/python3.11/colorsys.py')\nsys.exit(1)\n"))
		res, err := grade(t, in, patch)
		models(t, in, res, err)
		if !strings.Contains(string(res.Output), "No module named 'colorsys'") {
			t.Errorf("the patch's install did not remove the module:\n%s", res.Output)
		}
	})
}
