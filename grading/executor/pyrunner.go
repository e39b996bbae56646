package executor

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"ctxlab/grading/testrun"
)

// pythonRunner is what a local Python test run starts its interpreters through: ctxlab's helpers (the embedded
// python folder) and shims, in a folder of the run's own outside the worktree (read-only to the tests), and the
// results file in the worktree, which the tests' uid must be able to claim.
//
// Every interpreter the run starts goes through ctxlab_boot.py (its docstring says how): the command itself
// (Command, whose interpreter is started so), and whatever the command starts by name, through the shims of
// ShimDir, first on the tests' PATH (python, python3, python3.X, and the pytest, py.test and tox scripts). So the
// interpreter's start-up reads nothing of the worktree, and the results channel is claimed by the first pytest or
// unittest any of them runs, whatever wraps it (env, bash -c, tox).
type pythonRunner struct {
	// Dir holds the helpers and ctxlab_boot.json; ShimDir the shims.
	Dir, ShimDir string
	// Results is the results file (testrun.Options.Results), in the worktree.
	Results string
	// Python is the environment's interpreter, which the python shims start.
	Python string
}

// pyResultsDir is the worktree folder of the results file; whatever the model patch put there is removed first.
const pyResultsDir = ".ctxlab-py"

// pythonShimNames are the programs a test command may start by name that run Python: the interpreters (and
// python3.X of the environment's), and the scripts whose first line names an interpreter.
var (
	pythonShimNames = []string{"python", "python3"}
	scriptShimNames = []string{"pytest", "py.test", "tox"}
)

// newPythonRunner writes the run's helpers, shims and boot configuration for the worktree dir: py is the
// environment's interpreter, pathEnv the tests' PATH (the shims start what it would find), listed the ids of the
// listed mode (nil otherwise). Close removes what it wrote outside the worktree.
func newPythonRunner(dir, py, pathEnv string, listed []string) (*pythonRunner, error) {
	helpers, err := os.MkdirTemp("", fmt.Sprintf("%s%d-py-", TempPrefix, os.Getpid()))
	if err != nil {
		return nil, err
	}
	r := &pythonRunner{Dir: helpers, ShimDir: filepath.Join(helpers, "bin"), Python: py}
	if err := r.write(dir, pathEnv, listed); err != nil {
		r.Close()
		return nil, fmt.Errorf("python helpers: %w", err)
	}
	return r, nil
}

func (r *pythonRunner) write(dir, pathEnv string, listed []string) error {
	// Readable by the tests' uid; written by nobody else.
	if err := os.Chmod(r.Dir, 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(r.ShimDir, 0o755); err != nil {
		return err
	}
	entries, err := pythonHelpers.ReadDir("python")
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := pythonHelpers.ReadFile("python/" + e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(r.Dir, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.RemoveAll(pyResultsDir); err != nil {
		return err
	}
	if err := root.Mkdir(pyResultsDir, 0o755); err != nil {
		return err
	}
	r.Results = filepath.Join(dir, pyResultsDir, resultsFile)
	cfg := map[string]string{"results": r.Results}
	if listed != nil {
		var b strings.Builder
		for _, id := range listed {
			b.WriteString(hex.EncodeToString([]byte(id)) + "\n")
		}
		cfg["listed"] = filepath.Join(r.Dir, "listed.txt")
		if err := os.WriteFile(cfg["listed"], []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "ctxlab_boot.json"), b, 0o644); err != nil {
		return err
	}
	return r.writeShims(pathEnv)
}

// writeShims writes a shim for each interpreter name (to the environment's interpreter) and for each script of
// scriptShimNames found on pathEnv whose first line names an interpreter.
func (r *pythonRunner) writeShims(pathEnv string) error {
	names := slices.Clone(pythonShimNames)
	if v, err := pythonVersion(r.Python); err == nil {
		names = append(names, "python"+v)
	}
	for _, n := range names {
		if err := r.writeShim(n, r.Python, ""); err != nil {
			return err
		}
	}
	for _, n := range scriptShimNames {
		script := lookPathIn(n, pathEnv)
		if script == "" {
			continue
		}
		if interp := scriptInterpreter(script, pathEnv); interp != "" {
			if err := r.writeShim(n, interp, script); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeShim writes ShimDir/name, which starts interp through ctxlab_boot.py (with script, when set, as the script
// it runs).
func (r *pythonRunner) writeShim(name, interp, script string) error {
	return r.writeShimAt(filepath.Join(r.ShimDir, name), interp, script)
}

// writeShimAt writes the shim file at path.
func (r *pythonRunner) writeShimAt(path, interp, script string) error {
	argv := r.bootArgv(interp, path, script)
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	body := "#!/bin/sh\nexec " + strings.Join(quoted, " ") + " \"$@\"\n"
	return os.WriteFile(path, []byte(body), 0o755)
}

// bootArgv is the start of a command line that runs interp through ctxlab_boot.py's first stage, shim being what
// the process reports as its executable (children started with sys.executable come back through it), and script
// the script it runs, if it is one.
func (r *pythonRunner) bootArgv(interp, shim, script string) []string {
	argv := []string{interp, "-I", "-S", filepath.Join(r.Dir, "ctxlab_boot.py"), shim}
	if script != "" {
		argv = append(argv, "--ctxlab-script", script)
	}
	return argv
}

// Command is cmd started through ctxlab_boot.py when its program is an interpreter or a script that names one (the
// shim of its name, so that it reports it as its executable), else cmd itself (a wrapper, whose interpreters the
// shims catch).
func (r *pythonRunner) Command(cmd []string, pathEnv string) []string {
	if len(cmd) == 0 {
		return cmd
	}
	prog := cmd[0]
	found := prog
	if !strings.Contains(prog, "/") {
		found = lookPathIn(prog, pathEnv)
	}
	base := filepath.Base(prog)
	switch {
	case found == "":
		return cmd
	case pythonInterpreter.MatchString(base):
		// Children started with sys.executable come back through a shim of the same interpreter.
		shim := filepath.Join(r.ShimDir, "python3")
		if found != r.Python {
			shim = filepath.Join(r.Dir, "python-argv0")
			if err := r.writeShimAt(shim, found, ""); err != nil {
				return cmd
			}
		}
		return append(r.bootArgv(found, shim, ""), cmd[1:]...)
	case slices.Contains(scriptShimNames, base):
		if interp := scriptInterpreter(found, pathEnv); interp != "" {
			return append(r.bootArgv(interp, filepath.Join(r.ShimDir, "python3"), found), cmd[1:]...)
		}
	}
	return cmd
}

// Env are the tests' variables the runner sets: the shims first on PATH.
func (r *pythonRunner) Env(pathEnv string) []string {
	return []string{"PATH=" + r.ShimDir + string(os.PathListSeparator) + pathEnv}
}

// Close removes the helpers' folder.
func (r *pythonRunner) Close() { _ = os.RemoveAll(r.Dir) }

// pythonInterpreter matches the names of Python interpreters (python, python3, python3.11).
var pythonInterpreter = regexp.MustCompile(`^python[0-9.]*$`)

// pythonVersion is "3.11" for an interpreter.
func pythonVersion(py string) (string, error) {
	out, err := exec.Command(py, "-I", "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output()
	return strings.TrimSpace(string(out)), err
}

// lookPathIn is exec.LookPath over the folders of pathEnv, or "".
func lookPathIn(name, pathEnv string) string {
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// scriptInterpreter is the Python interpreter a script's first line names (#!/usr/bin/python3, or #!/usr/bin/env
// python3 looked up on pathEnv), or "" when it names none.
func scriptInterpreter(script, pathEnv string) string {
	f, err := os.Open(script)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "#!"))
	if !strings.HasPrefix(line, "#!") || len(fields) == 0 {
		return ""
	}
	interp := fields[0]
	if path.Base(interp) == "env" && len(fields) > 1 {
		interp = lookPathIn(fields[1], pathEnv)
	}
	if interp == "" || !pythonInterpreter.MatchString(filepath.Base(interp)) {
		return ""
	}
	return interp
}

// pythonReadOnly are the folders the sandbox must show the tests for the runner: its helpers, the interpreter's
// own folder where no place of the sandbox's Layout holds it (testrun.CommandFolders: a pyenv, a virtualenv), and
// the environment of PythonEnvsDir the interpreter belongs to.
func (r *pythonRunner) pythonReadOnly(worktree string) []string {
	dirs := append([]string{r.Dir}, testrun.CommandFolders(r.Python, worktree)...)
	// A virtual environment made from wheels (PythonEnvsDir), wherever the cache folder lies.
	if envs, err := PythonEnvsDir(); err == nil {
		if rel, ok := strings.CutPrefix(r.Python, envs+string(filepath.Separator)); ok {
			top, _, _ := strings.Cut(rel, string(filepath.Separator))
			dirs = append(dirs, filepath.Join(envs, top))
		}
	}
	return dirs
}
