package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"strings"
	"time"
)

// The stated environment in an instance image: the harness installs what a row's install_config states (its
// pre_install, packages, pip_packages and install) when it builds the image (make_repo_script_list_py), and its
// eval script runs only the eval and install commands again. What the image lacks is the environment's failure,
// decided as in the local executor (pythonEnv.lacksPackages, environmentFailure).

// noDpkgQuery is what the Debian package check prints in an image without dpkg-query.
const noDpkgQuery = "ctxlab: no dpkg-query"

// imagePython runs the image's Python as the eval script finds it (the conda environment's, else python or
// python3 on PATH), isolated from the user's site and variables, on the program of its first argument.
var imagePython = "{ " + condaActivate + "; } >&2\n" +
	"py=$(command -v python || command -v python3) || { echo 'no python or python3 on PATH' >&2; exit 127; }\n" +
	`exec "$py" -I -c "$1"`

// checkEnvironment checks, in the container before the model patch reaches it, that the image has what r's
// stated environment installs: the Debian packages of its pre_install (dpkg-query) and its Python requirements
// (pip_packages, packages, the install's pip targets, read with the image's Python). What it lacks is the
// environment's failure; the notes say what else was seen.
func (c *container) checkEnvironment(r Request) ([]string, error) {
	env, err := planPythonEnv(r, c.testbedFile)
	if err != nil || env == nil {
		return nil, err
	}
	id, image := r.Instance.InstanceID, "the image "+ImageOf(r.Config.Namespace, r.Instance)
	var notes, deb []string
	if len(env.debPackages) > 0 {
		// dpkg-query exits 1 when some package is unknown to it: what it lists is what counts.
		out, err := c.output(nil, append([]string{"/bin/sh", "-c", `command -v dpkg-query >/dev/null 2>&1 || ` +
			`{ echo '` + noDpkgQuery + `'; exit 0; }; "$@"; exit 0`, "sh"}, dpkgQuery(env.debPackages)...)...)
		switch {
		case err != nil:
			return notes, err
		case bytes.Contains(out, []byte(noDpkgQuery)):
			notes = append(notes, "the Debian packages of pre_install are not checked: the image has no dpkg-query")
		default:
			deb = debMissing(env.debPackages, out)
		}
	}
	missing, other, err := checkRequirements(func(program string, stdin []byte) ([]byte, error) {
		return c.output(stdin, "/bin/bash", "-c", imagePython, "bash", program)
	}, env.requirements)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return notes, env.failure(id, "cannot be checked in %s: %v", image, err)
	case err != nil:
		return notes, err
	}
	for _, o := range other {
		notes = append(notes, "another version than asked: "+o)
	}
	return notes, env.lacksPackages(id, image, deb, missing, "the harness installs them when it builds the "+
		"instance image: build or pull an image that has them")
}

// testbedFile reads a file of the repository in the container (/testbed, before the model patch reaches it).
func (c *container) testbedFile(name string) ([]byte, error) {
	return c.output(nil, "cat", "--", path.Join(Testbed, path.Clean("/"+name)))
}

// listModules prints the names of /testbed's folders, a line holding "/", then the names of its Python files and
// compiled modules, skipping hidden folders and node_modules as the local listing does (moduleNames).
const listModules = `cd ` + Testbed + ` || exit 1
find . \( -name '.?*' -o -name node_modules \) -prune -o -type d -print | sed 's,.*/,,' | sort -u
echo /
find . \( -name '.?*' -o -name node_modules \) -prune -o -type f \( -name '*.py' -o -name '*.cpython-*' \) -print |
	sed 's,.*/,,' | sort -u`

// moduleNames are the names of the modules /testbed holds (moduleName), nil when they cannot be listed.
func (c *container) moduleNames() map[string]bool {
	out, err := c.output(nil, "/bin/sh", "-c", listModules)
	dirs, files, ok := strings.Cut(string(out), "\n/\n")
	if err != nil || !ok {
		return nil
	}
	names := map[string]bool{}
	for i, list := range []string{dirs, files} {
		for _, n := range strings.Split(list, "\n") {
			if m, ok := moduleName(n, i == 0); ok && n != "" && n != "." {
				names[m] = true
			}
		}
	}
	return names
}

// output runs a command in the container (given stdin, when not nil) and returns its stdout; its stderr is in the
// error.
func (c *container) output(stdin []byte, args ...string) ([]byte, error) {
	cctx, cancel := context.WithTimeout(c.ctx, 10*time.Minute)
	defer cancel()
	argv := []string{"exec"}
	if stdin != nil {
		argv = append(argv, "-i")
	}
	cmd := exec.CommandContext(cctx, c.bin, append(append(argv, c.name), args...)...)
	cmd.Env = dockerEnv()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, markDocker(fmt.Errorf("docker exec %s: %w: %s", args[0], err, bytes.TrimSpace(stderr.Bytes())),
			stderr.Bytes())
	}
	return out, nil
}
