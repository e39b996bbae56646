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
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
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

// pythonEnv is what a stated environment needs, read from the repository at base_commit (before the model patch):
// the interpreter, whether it installs the repository itself, what it must find installed, and the commands the
// local executor does not run (it installs nothing on the machine). The docker executor checks the packages in the
// instance's image (dockerEnvironment).
type pythonEnv struct {
	cfg    *swebench.InstallConfig
	source string
	// python is the interpreter (grading.python, else python<version> when the environment names a version this
	// machine has, else the default); empty: the default.
	python string
	// installsRepo says the install installs the repository itself (pip install -e ., setup.py develop, a
	// requirements file's -e . line); importRoots are the worktree folders (relative) that this makes importable
	// for the local executor: src for a src layout (srcRoots).
	installsRepo bool
	importRoots  []string
	// requirements are the Python distributions the environment installs (pip_packages, packages, requirement
	// files, other pip targets); debPackages the Debian packages its pre_install installs.
	requirements, debPackages []string
	// notRun are the commands of install and pre_install the local executor does not run; notes what else it says.
	notRun, notes []string
}

// repoFile reads a file of the repository at base_commit by its path relative to the repository's root.
type repoFile func(name string) ([]byte, error)

// worktreeFile reads the files of the worktree dir, never through a link that leads out of it.
func worktreeFile(dir string) repoFile {
	return func(name string) ([]byte, error) {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		return root.ReadFile(filepath.Clean(name))
	}
}

// planPythonEnv reads the environment r states, with the repository's files (its requirement files) read by read;
// nil when none is stated.
func planPythonEnv(r Request, read repoFile) (*pythonEnv, error) {
	cfg, source, err := environmentOf(r)
	if err != nil || cfg == nil {
		return nil, err
	}
	e := &pythonEnv{cfg: cfg, source: source}
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
			e.readRequirements(read, f)
		}
	case "environment.yml":
		e.notes = append(e.notes, "packages: environment.yml (a conda environment) is not installed by the local executor")
	default:
		e.requirements = append(e.requirements, strings.Fields(p)...)
	}
	for _, c := range splitShell(cfg.Install) {
		e.readInstall(read, c)
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
					// A version (pkg=1.2) or release (pkg/bookworm) asked for: the package is what dpkg knows.
					name, _, _ := strings.Cut(f, "=")
					name, _, _ = strings.Cut(name, "/")
					e.debPackages = append(e.debPackages, name)
				}
			}
		case aptOther.MatchString(c):
		default:
			e.notRun = append(e.notRun, c)
		}
	}
}

// readInstall reads one command of install: a pip install or setup.py run of the repository itself installs the
// repository, other pip targets are requirements, and anything else is not run.
func (e *pythonEnv) readInstall(read repoFile, cmd string) {
	if setupPyRun.MatchString(cmd) {
		e.installsRepo = true
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
				e.readRequirements(read, strings.Trim(args[i], `'"`))
			}
		case slices.Contains([]string{"-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
			"--find-links", "--target", "-t", "--prefix", "--root", "--config-settings", "-C"}, a):
			i++ // an option's value
		case a == "-e" || a == "--editable" || strings.HasPrefix(a, "-"):
		case a == "." || strings.HasPrefix(a, ".[") || a == "./":
			e.installsRepo = true // the repository itself; its extras' dependencies are not checked
		default:
			e.requirements = append(e.requirements, a)
		}
	}
}

// srcRoots are the folders of the worktree dir that an install of the repository makes importable: src, when the
// repository keeps its packages there (a src layout), else none beyond the worktree itself, which is always on the
// path.
func srcRoots(dir string) []string {
	entries, err := os.ReadDir(filepath.Join(dir, "src"))
	if err != nil {
		return nil
	}
	for _, d := range entries {
		_, initErr := os.Stat(filepath.Join(dir, "src", d.Name(), "__init__.py"))
		if d.IsDir() && initErr == nil || !d.IsDir() && strings.HasSuffix(d.Name(), ".py") {
			return []string{"src"}
		}
	}
	return nil
}

// readRequirements reads a requirements file of the repository (at base_commit): its requirement lines, and the
// files its -r lines name.
func (e *pythonEnv) readRequirements(read repoFile, name string) {
	b, err := read(name)
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
			e.readRequirements(read, path.Join(path.Dir(name), strings.TrimSpace(line[3:])))
		case strings.HasPrefix(line, "-e .") || line == "." || strings.HasPrefix(line, ".["):
			e.installsRepo = true
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
		if d.IsDir() && p != dir && (strings.HasPrefix(name, ".") || name == "node_modules") {
			return filepath.SkipDir
		}
		if m, ok := moduleName(name, d.IsDir()); ok {
			names[m] = true
		}
		return nil
	})
	return names
}

// moduleName is the module a folder or file of a repository may be imported as: a folder's name, a Python file's
// name without .py, a compiled module's name before its .cpython- tag.
func moduleName(name string, dir bool) (string, bool) {
	if dir {
		return name, true
	}
	if m, ok := strings.CutSuffix(name, ".py"); ok {
		return m, true
	}
	if i := strings.Index(name, ".cpython-"); i > 0 {
		return name[:i], true
	}
	return "", false
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

// checkRequirements asks an interpreter which requirements it lacks (missing) or has in another version (noted
// only: Debian's versions rarely equal a row's pins); run runs it on a program with the requirements as its stdin
// and returns its stdout.
func checkRequirements(run func(program string, stdin []byte) ([]byte, error), reqs []string) (missing, other []string, err error) {
	if len(reqs) == 0 {
		return nil, nil, nil
	}
	in, _ := json.Marshal(reqs)
	out, err := run(envCheck, in)
	if err != nil {
		return nil, nil, fmt.Errorf("checking the environment's packages: %w", err)
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

// localPython runs the interpreter py of this machine, isolated from the user's site and variables, on a program.
func localPython(ctx context.Context, py string) func(string, []byte) ([]byte, error) {
	return func(program string, stdin []byte) ([]byte, error) {
		cmd := exec.CommandContext(ctx, py, "-I", "-c", program)
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", py, err)
		}
		return out, nil
	}
}

// dpkgQuery is the command that lists the states of Debian packages, a line each: the name, a tab, the status.
// Packages dpkg never heard of are not listed (and make it exit 1).
func dpkgQuery(pkgs []string) []string {
	return append([]string{"dpkg-query", "-W", "-f=${Package}\t${Status}\n"}, pkgs...)
}

// debMissing are the packages of pkgs that dpkgQuery's output out does not report installed.
func debMissing(pkgs []string, out []byte) []string {
	installed := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if name, status, ok := strings.Cut(line, "\t"); ok && strings.HasSuffix(strings.TrimSpace(status), " installed") {
			installed[name] = true
		}
	}
	var missing []string
	for _, p := range pkgs {
		name, _, _ := strings.Cut(p, ":") // an architecture (pkg:amd64) is not part of the name dpkg-query prints
		if !installed[name] {
			missing = append(missing, p)
		}
	}
	return missing
}

// failure is the environment's failure of instance id (errkind.PythonEnvironment), saying what the environment
// does.
func (e *pythonEnv) failure(id, format string, args ...any) error {
	return errkind.Mark(errkind.PythonEnvironment, fmt.Errorf("instance %s: the Python environment (%s) %s",
		id, e.source, fmt.Sprintf(format, args...)))
}

// lacksPackages is the environment's failure when it needs Debian packages (deb) or Python distributions (py)
// that where (this machine, an interpreter, an image) has not installed, saying how to provide them (pyHint for
// the Python ones); nil when it lacks none. Both executors decide by it.
func (e *pythonEnv) lacksPackages(id, where string, deb, py []string, pyHint string) error {
	var needs []string
	if len(deb) > 0 {
		needs = append(needs, fmt.Sprintf("needs Debian packages %s, which %s has not installed (apt-get install -y %s)",
			strings.Join(deb, ", "), where, strings.Join(deb, " ")))
	}
	if len(py) > 0 {
		needs = append(needs, fmt.Sprintf("needs Python packages %s, which %s has not installed (%s)",
			strings.Join(py, ", "), where, pyHint))
	}
	if len(needs) == 0 {
		return nil
	}
	return e.failure(id, "%s", strings.Join(needs, "; and it "))
}

// prepare checks the environment on this machine for instance id with the interpreter py, and returns the
// interpreter to run (a virtual environment of PythonEnvsDir made from wheels when the requirements are missing
// and wheels are given). A missing Debian package or requirement is the environment's failure
// (errkind.PythonEnvironment), named with what to install.
func (e *pythonEnv) prepare(ctx context.Context, id, py, wheels string) (string, error) {
	if _, err := exec.LookPath("dpkg-query"); err == nil && len(e.debPackages) > 0 {
		out, _ := exec.CommandContext(ctx, dpkgQuery(e.debPackages)[0], dpkgQuery(e.debPackages)[1:]...).Output()
		if err := e.lacksPackages(id, "this machine", debMissing(e.debPackages, out), nil, ""); err != nil {
			return "", err
		}
	}
	missing, other, err := checkRequirements(localPython(ctx, py), e.requirements)
	if err != nil {
		return "", e.failure(id, "cannot be checked: %v", err)
	}
	for _, o := range other {
		e.notes = append(e.notes, "another version than asked: "+o)
	}
	if len(missing) == 0 {
		return py, nil
	}
	if wheels == "" {
		return "", e.lacksPackages(id, py, nil, missing, "install Debian's python3-* packages of them, or give "+
			"grading.python_wheels a folder of their wheels")
	}
	venv, err := wheelsEnv(ctx, py, wheels, missing)
	if err != nil {
		return "", e.failure(id, "could not be installed from %s: %v", wheels, err)
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

// setupStatus is how a stated environment's setup went in a docker grade: the first non-zero exit status among
// the eval script's eval_commands and install (0: each succeeded), when the script recorded one.
type setupStatus struct {
	code  int
	known bool
}

func (s setupStatus) failed() bool { return s.known && s.code != 0 }

// baseRun is what environmentFailure weighs a grade's signs against: the modules the repository holds at
// base_commit, and, when rerun, what a grade of the instance without the model patch (the test patch alone) showed.
type baseRun struct {
	modules map[string]bool
	rerun   bool
	// missing are the modules its tests could not import; setup its setup's status; testsRan whether any of the
	// instance's tests had a result.
	missing  []string
	setup    setupStatus
	testsRan bool
}

// environmentFailure decides, for both executors, whether a Python grade of r that did not resolve failed for its
// environment (errkind.PythonEnvironment, naming what failed) rather than for the model patch (nil). Its signs:
//   - the tests could not import a module (rep.MissingModules) that the repository does not hold at base_commit,
//     the model patch does not import or create, and the instance's reference patch does not create (a module the
//     task adds is the model's to add): a dependency the environment lacks;
//   - the stated setup failed (setup: the eval script's record of eval_commands and install) and none of the
//     instance's tests ran.
//
// base is asked only when a sign shows. When its run is a rerun without the model patch, a sign counts only if the
// rerun shows it too (the same module missing; the setup failing with no test run): in a container the install runs
// code of the patch as root (its setup.py, or a module standing in for pip), which can delete what the tests import
// or make the install fail; and in either executor the patch's code can raise ModuleNotFoundError for any name.
func environmentFailure(ctx context.Context, r Request, rep testlog.Report, setup setupStatus,
	base func(context.Context) (baseRun, error)) error {
	if testlog.DecideInstance(r.Instance, rep).Resolved {
		return nil
	}
	ours := patchImports(r.Patch)
	theirs := patchCreates(r.Instance.Patch)
	var suspects []string
	for _, m := range rep.MissingModules {
		top, _, _ := strings.Cut(m, ".")
		if top != "" && !ours[top] && !theirs[top] && !slices.Contains(suspects, m) {
			suspects = append(suspects, m)
		}
	}
	setupSign := setup.failed() && !listedTestsRan(r.Instance, rep)
	if len(suspects) == 0 && !setupSign {
		return nil
	}
	b, err := base(ctx)
	if err != nil {
		return err
	}
	var lacking []string
	for _, m := range suspects {
		top, _, _ := strings.Cut(m, ".")
		if !b.modules[top] && (!b.rerun || slices.Contains(b.missing, m)) {
			lacking = append(lacking, m)
		}
	}
	both := ""
	if b.rerun {
		both = " with the model patch and without it"
	}
	id := r.Instance.InstanceID
	if len(lacking) > 0 {
		return errkind.Mark(errkind.PythonEnvironment, fmt.Errorf("instance %s: the tests could not import %s%s, "+
			"which the repository does not hold and the model patch does not import: the Python environment lacks "+
			"it (install it, state it in install_config, or give grading.python_wheels)", id,
			strings.Join(lacking, ", "), both))
	}
	if setupSign && (!b.rerun || b.setup.failed() && !b.testsRan) {
		return errkind.Mark(errkind.PythonEnvironment, fmt.Errorf("instance %s: the Python environment's setup "+
			"(eval_commands and install) exited %d%s, and none of the instance's tests ran: the environment cannot "+
			"be set up as stated (the log shows the failing command)", id, setup.code, both))
	}
	return nil
}

// listedTestsRan says whether any of the instance's listed tests (FAIL_TO_PASS, PASS_TO_PASS) has a result in
// rep; for an instance that lists none, whether any test has.
func listedTestsRan(in swebench.Instance, rep testlog.Report) bool {
	listed := slices.Concat(in.FailToPass, in.PassToPass)
	if len(listed) == 0 {
		return len(rep.Tests) > 0
	}
	return len(testlog.Decide(in.FailToPass, in.PassToPass, rep).Missing) < len(listed)
}

// importLine finds the top-level module of an added import line.
var importLine = regexp.MustCompile(`^\+\s*(?:from\s+([A-Za-z_][A-Za-z0-9_]*)|import\s+([A-Za-z_][A-Za-z0-9_]*))`)

// patchImports are the top-level modules a patch's added lines import, and the modules it creates or changes.
func patchImports(patch string) map[string]bool {
	out := patchCreates(patch)
	for _, line := range strings.Split(patch, "\n") {
		if m := importLine.FindStringSubmatch(line); m != nil {
			out[m[1]+m[2]] = true
		}
	}
	return out
}

// patchCreates are the names of the folders and modules of the files a patch creates or changes.
func patchCreates(patch string) map[string]bool {
	out := map[string]bool{}
	if files, err := diff.ChangedFiles(patch); err == nil {
		for _, f := range files {
			for _, part := range strings.Split(strings.TrimSuffix(f, ".py"), "/") {
				out[part] = true
			}
		}
	}
	return out
}
