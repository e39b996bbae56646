package executor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/testlog"
	"ctxlab/dataset/swebench"
	"ctxlab/internal/flock"
	"ctxlab/patch/diff"
)

// Sources of a stated Python environment.
const (
	envFromRow  = "install_config"
	envFromSpec = "grading.install_config"
)

// environmentOf is the Python environment an instance states: its row's install_config, else the spec's
// grading.install_config; nil when neither states one. The source names which.
func environmentOf(r Request) (*swebench.InstallConfig, string, error) {
	if r.Instance.InstallConfig != nil {
		return r.Instance.InstallConfig, envFromRow, nil
	}
	if len(bytes.TrimSpace(r.Config.InstallConfig)) == 0 || string(bytes.TrimSpace(r.Config.InstallConfig)) == "null" {
		return nil, "", nil
	}
	cfg, err := swebench.DecodeInstallConfig(r.Config.InstallConfig)
	if err != nil {
		return nil, "", errkind.Mark(errkind.BadInput, fmt.Errorf("grading.install_config: %w", err))
	}
	return cfg, envFromSpec, nil
}

// withEnvironment is the instance with the spec's grading.install_config as its own when its row states none, so
// that both executors read one statement of the environment (InstanceSpec for the docker executor).
func withEnvironment(r Request) swebench.Instance {
	in := r.Instance
	if in.InstallConfig == nil {
		if cfg, _, err := environmentOf(r); err == nil {
			in.InstallConfig = cfg
		}
	}
	return in
}

// pythonEnv is what the local executor makes of a stated environment, read from the repository at base_commit
// (before the model patch): the interpreter, the folders the repository's own install puts on the path, what it
// must find installed, and the commands it does not run (it installs nothing on the machine).
type pythonEnv struct {
	cfg    *swebench.InstallConfig
	source string
	// python is the interpreter (grading.python, else python<version> when the environment names a version this
	// machine has, else the default); empty: the default.
	python string
	// importRoots are the worktree folders (relative) that the install of the repository itself (pip install -e .,
	// setup.py develop) makes importable: src for a src layout.
	importRoots []string
	// requirements are the Python distributions the environment installs (pip_packages, packages, requirement
	// files, other pip targets); debPackages the Debian packages its pre_install installs.
	requirements, debPackages []string
	// notRun are the commands of install and pre_install the local executor does not run; notes what else it says.
	notRun, notes []string
	// baseModules are the top-level module names the repository holds at base_commit, at any depth: a module the
	// tests cannot import that is none of these, nor imported by the model patch, is missing from the environment.
	baseModules map[string]bool
}

// planPythonEnv reads the environment of r in the worktree dir at base_commit; nil when none is stated.
func planPythonEnv(r Request, dir string) (*pythonEnv, error) {
	cfg, source, err := environmentOf(r)
	if err != nil || cfg == nil {
		return nil, err
	}
	e := &pythonEnv{cfg: cfg, source: source, baseModules: moduleNames(dir)}
	e.choosePython(r.Config.Python)
	for _, c := range cfg.PreInstall {
		e.readPreInstall(c)
	}
	e.requirements = append(e.requirements, cfg.PipPackages...)
	switch p := strings.TrimSpace(cfg.Packages); p {
	case "":
	case "requirements.txt":
		paths := []string(cfg.ReqsPath)
		if len(paths) == 0 {
			paths = []string{"requirements.txt"}
		}
		for _, f := range paths {
			e.readRequirements(dir, f)
		}
	case "environment.yml":
		e.notes = append(e.notes, "packages: environment.yml (a conda environment) is not installed by the local executor")
	default:
		e.requirements = append(e.requirements, strings.Fields(p)...)
	}
	for _, c := range splitShell(cfg.Install) {
		e.readInstall(dir, c)
	}
	return e, nil
}

// choosePython picks the interpreter: the spec's, else python<version> on PATH when the environment names one.
func (e *pythonEnv) choosePython(spec string) {
	if spec != "" || e.cfg.Python == "" {
		e.python = spec
		return
	}
	if p, err := exec.LookPath("python" + e.cfg.Python); err == nil {
		e.python = p
		return
	}
	e.notes = append(e.notes, fmt.Sprintf("the environment asks for Python %s, which this machine lacks; graded with "+
		"the default interpreter", e.cfg.Python))
}

// splitShell splits a shell line on &&, || and ;, and lines.
func splitShell(s string) []string {
	var out []string
	for _, part := range regexp.MustCompile(`&&|\|\||;|\n`).Split(s, -1) {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

var (
	aptInstall = regexp.MustCompile(`^(sudo\s+)?apt(-get)?\s+(.*\s)?install\s+(.*)$`)
	aptOther   = regexp.MustCompile(`^(sudo\s+)?apt(-get)?\s+(-\S+\s+)*(update|clean)\b`)
	pipInstall = regexp.MustCompile(`^(\S*python[0-9.]*\s+-m\s+)?pip[0-9.]*\s+install\s+(.*)$`)
	setupPyRun = regexp.MustCompile(`^\S*python[0-9.]*\s+setup\.py\s+(develop|install|build|build_ext)\b`)
)

// readPreInstall reads one pre_install command: apt-get install names Debian packages, apt-get update is nothing
// to do here, anything else is not run.
func (e *pythonEnv) readPreInstall(cmd string) {
	for _, c := range splitShell(cmd) {
		switch m := aptInstall.FindStringSubmatch(c); {
		case m != nil:
			for _, f := range strings.Fields(m[4]) {
				if !strings.HasPrefix(f, "-") {
					e.debPackages = append(e.debPackages, f)
				}
			}
		case aptOther.MatchString(c):
		default:
			e.notRun = append(e.notRun, c)
		}
	}
}

// readInstall reads one command of install: a pip install or setup.py run of the repository itself puts its
// import roots on the path, other pip targets are requirements, and anything else is not run.
func (e *pythonEnv) readInstall(dir, cmd string) {
	if setupPyRun.MatchString(cmd) {
		e.addImportRoots(dir)
		return
	}
	m := pipInstall.FindStringSubmatch(cmd)
	if m == nil {
		e.notRun = append(e.notRun, cmd)
		return
	}
	args := strings.Fields(m[2])
	for i := 0; i < len(args); i++ {
		a := strings.Trim(args[i], `'"`)
		switch {
		case a == "-r" || a == "--requirement":
			if i+1 < len(args) {
				i++
				e.readRequirements(dir, strings.Trim(args[i], `'"`))
			}
		case slices.Contains([]string{"-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
			"--find-links", "--target", "-t", "--prefix", "--root", "--config-settings", "-C"}, a):
			i++ // an option's value
		case a == "-e" || a == "--editable" || strings.HasPrefix(a, "-"):
		case a == "." || strings.HasPrefix(a, ".[") || a == "./":
			e.addImportRoots(dir) // the repository itself; its extras' dependencies are not checked
		default:
			e.requirements = append(e.requirements, a)
		}
	}
}

// addImportRoots puts the folders that an install of the repository makes importable on the path: src, when the
// repository keeps its packages there (a src layout), else nothing beyond the worktree itself, which is always on
// the path.
func (e *pythonEnv) addImportRoots(dir string) {
	if slices.Contains(e.importRoots, "src") {
		return
	}
	entries, err := os.ReadDir(filepath.Join(dir, "src"))
	if err != nil {
		return
	}
	for _, d := range entries {
		_, initErr := os.Stat(filepath.Join(dir, "src", d.Name(), "__init__.py"))
		if d.IsDir() && initErr == nil || !d.IsDir() && strings.HasSuffix(d.Name(), ".py") {
			e.importRoots = append(e.importRoots, "src")
			return
		}
	}
}

// readRequirements reads a requirements file of the repository (at base_commit): its requirement lines, and the
// files its -r lines name.
func (e *pythonEnv) readRequirements(dir, name string) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return
	}
	defer root.Close()
	b, err := root.ReadFile(filepath.Clean(name))
	if err != nil {
		e.notes = append(e.notes, fmt.Sprintf("requirements file %s: %v", name, err))
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, " #")
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "-r "):
			e.readRequirements(dir, filepath.Join(filepath.Dir(name), strings.TrimSpace(line[3:])))
		case strings.HasPrefix(line, "-e .") || line == "." || strings.HasPrefix(line, ".["):
			e.addImportRoots(dir)
		case strings.HasPrefix(line, "-"):
		default:
			e.requirements = append(e.requirements, line)
		}
	}
}

// moduleNames are the names of the modules and packages of a worktree at any depth (x.py, x/ with __init__.py,
// and any folder holding Python files, which a namespace package or a test's own path may import).
func moduleNames(dir string) map[string]bool {
	names := map[string]bool{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || name == "node_modules") {
				return filepath.SkipDir
			}
			names[name] = true
			return nil
		}
		if m, ok := strings.CutSuffix(name, ".py"); ok {
			names[m] = true
		} else if i := strings.Index(name, ".cpython-"); i > 0 {
			names[name[:i]] = true
		}
		return nil
	})
	return names
}

// envCheck is the program that says which of the requirements (JSON on stdin) the interpreter has no
// distribution of, and which it has in another version than asked, as JSON. It reads requirements with the
// interpreter's packaging when it has it, else by name only.
const envCheck = `import json, re, sys
import importlib.metadata as md
try:
    from packaging.requirements import Requirement
except ImportError:
    Requirement = None
out = {"missing": [], "other_version": []}
for spec in json.load(sys.stdin):
    name, want = re.split(r"[\s\[<>=!~;@]", spec.strip(), maxsplit=1)[0], None
    if Requirement is not None:
        try:
            req = Requirement(spec)
            if req.marker is not None and not req.marker.evaluate():
                continue
            name, want = req.name, req.specifier
        except Exception:
            pass
    try:
        version = md.version(name)
    except md.PackageNotFoundError:
        out["missing"].append(spec)
        continue
    if want is not None and str(want) and not want.contains(version, prereleases=True):
        out["other_version"].append("%s (installed %s)" % (spec, version))
json.dump(out, sys.stdout)
`

// checkRequirements asks py which requirements it lacks (missing) or has in another version (noted only: Debian's
// versions rarely equal a row's pins).
func checkRequirements(ctx context.Context, py string, reqs []string) (missing, other []string, err error) {
	if len(reqs) == 0 {
		return nil, nil, nil
	}
	in, _ := json.Marshal(reqs)
	cmd := exec.CommandContext(ctx, py, "-I", "-c", envCheck)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("checking the environment's packages with %s: %w", py, err)
	}
	var res struct{ Missing, OtherVersion []string }
	if err := json.Unmarshal(out, &struct {
		Missing      *[]string `json:"missing"`
		OtherVersion *[]string `json:"other_version"`
	}{&res.Missing, &res.OtherVersion}); err != nil {
		return nil, nil, fmt.Errorf("checking the environment's packages: %w: %s", err, out)
	}
	return res.Missing, res.OtherVersion, nil
}

// missingDebPackages are the Debian packages of the list that dpkg does not report installed.
func missingDebPackages(ctx context.Context, pkgs []string) []string {
	var missing []string
	for _, p := range pkgs {
		out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status}", p).Output()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), " installed") {
			missing = append(missing, p)
		}
	}
	return missing
}

// prepare checks the environment on this machine for instance id with the interpreter py, and returns the
// interpreter to run (a virtual environment of PythonEnvsDir made from wheels when the requirements are missing
// and wheels are given). A missing Debian package or requirement is the environment's failure
// (errkind.PythonEnvironment), named with what to install.
func (e *pythonEnv) prepare(ctx context.Context, id, py, wheels string) (string, error) {
	fail := func(format string, args ...any) error {
		return errkind.Mark(errkind.PythonEnvironment, fmt.Errorf("instance %s: the Python environment (%s) %s",
			id, e.source, fmt.Sprintf(format, args...)))
	}
	if _, err := exec.LookPath("dpkg-query"); err == nil && len(e.debPackages) > 0 {
		if m := missingDebPackages(ctx, e.debPackages); len(m) > 0 {
			return "", fail("needs Debian packages %s, which are not installed (apt-get install -y %s)",
				strings.Join(m, ", "), strings.Join(m, " "))
		}
	}
	missing, other, err := checkRequirements(ctx, py, e.requirements)
	if err != nil {
		return "", fail("cannot be checked: %v", err)
	}
	for _, o := range other {
		e.notes = append(e.notes, "another version than asked: "+o)
	}
	if len(missing) == 0 {
		return py, nil
	}
	if wheels == "" {
		return "", fail("needs Python packages %s, which %s has not installed (install Debian's python3-* packages "+
			"of them, or give grading.python_wheels a folder of their wheels)", strings.Join(missing, ", "), py)
	}
	venv, err := wheelsEnv(ctx, py, wheels, missing)
	if err != nil {
		return "", fail("could not be installed from %s: %v", wheels, err)
	}
	return venv, nil
}

// PythonEnvsDir is the folder that holds the virtual environments the local executor makes from a researcher's
// wheels (one per interpreter, wheel folder and requirements, kept by content), which the sandbox shows the tests
// read-only: ctxlab's folder of the user cache folder.
func PythonEnvsDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "ctxlab", "pyenvs"), nil
}

// wheelsEnv is the virtual environment (PythonEnvsDir/KEY/bin/python) with py's packages and the requirements
// installed offline from wheels (a folder, or a package index URL), made once per key.
func wheelsEnv(ctx context.Context, py, wheels string, reqs []string) (string, error) {
	root, err := PythonEnvsDir()
	if err != nil {
		return "", err
	}
	key, err := wheelsKey(py, wheels, reqs)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, key)
	bin := filepath.Join(dir, "bin", "python")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	// One maker per environment: the others wait, then find it made.
	unlock, err := flock.Lock(ctx, dir+".lock", 100*time.Millisecond)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, ".ctxlab-complete")); err == nil {
		return bin, nil
	}
	_ = os.RemoveAll(dir) // a maker that died half-way
	for _, argv := range [][]string{
		{py, "-m", "venv", "--system-site-packages", "--without-pip", dir},
		slices.Concat([]string{bin, "-m", "pip", "install", "--no-input", "--disable-pip-version-check"},
			wheelSource(wheels), reqs),
	} {
		out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
		}
	}
	return bin, os.WriteFile(filepath.Join(dir, ".ctxlab-complete"), nil, 0o644)
}

// wheelSource is pip's options for a wheel folder (--no-index --find-links) or a package index URL (--index-url).
func wheelSource(wheels string) []string {
	if strings.Contains(wheels, "://") && !strings.HasPrefix(wheels, "file://") {
		return []string{"--index-url=" + wheels}
	}
	return []string{"--no-index", "--find-links=" + strings.TrimPrefix(wheels, "file://")}
}

// wheelsKey is the content key of an environment made from wheels: the interpreter, the requirements, and the
// wheel folder's file names and sizes (an index URL by itself).
func wheelsKey(py, wheels string, reqs []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", py, wheels, strings.Join(slices.Sorted(slices.Values(reqs)), "\x00"))
	if dir := strings.TrimPrefix(wheels, "file://"); !strings.Contains(dir, "://") {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return "", err
		}
		for _, d := range entries {
			if fi, err := d.Info(); err == nil {
				fmt.Fprintf(h, "%s\x00%d\x00", d.Name(), fi.Size())
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// missingModuleFailure is the environment's failure when the tests could not import a module (rep's
// MissingModules) that the repository does not hold at base_commit and the model patch does not import: a
// dependency the environment lacks. nil otherwise, and for a module the patch imports (the model's mistake).
func missingModuleFailure(id string, rep testlog.Report, base map[string]bool, patch string) error {
	added := patchImports(patch)
	var lacking []string
	for _, m := range rep.MissingModules {
		top, _, _ := strings.Cut(m, ".")
		if top == "" || base[top] || added[top] || slices.Contains(lacking, m) {
			continue
		}
		lacking = append(lacking, m)
	}
	if len(lacking) == 0 {
		return nil
	}
	return errkind.Mark(errkind.PythonEnvironment, fmt.Errorf("instance %s: the tests could not import %s, which "+
		"the repository does not hold and the model patch does not import: the Python environment lacks it "+
		"(install it, state it in install_config, or give grading.python_wheels)", id, strings.Join(lacking, ", ")))
}

// importLine finds the top-level module of an added import line.
var importLine = regexp.MustCompile(`^\+\s*(?:from\s+([A-Za-z_][A-Za-z0-9_]*)|import\s+([A-Za-z_][A-Za-z0-9_]*))`)

// patchImports are the top-level modules a patch's added lines import, and the modules it creates.
func patchImports(patch string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(patch, "\n") {
		if m := importLine.FindStringSubmatch(line); m != nil {
			out[m[1]+m[2]] = true
		}
	}
	if files, err := diff.ChangedFiles(patch); err == nil {
		for _, f := range files {
			for _, part := range strings.Split(strings.TrimSuffix(f, ".py"), "/") {
				out[part] = true
			}
		}
	}
	return out
}
