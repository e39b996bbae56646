package executor

import (
	"bytes"
	"errors"
	"io/fs"
	"os/exec"
	"strings"
	"syscall"

	"ctxlab/activities/api/errkind"
)

// The grading machine's failures are marked with their kind where they happen, so that a row says they are the
// environment's (errkind.Environment), never the model's: the step that reads the error only looks at the mark.

// daemonDown lists what the docker CLI says when no engine answers.
var daemonDown = []string{"Cannot connect to the Docker daemon", "Is the docker daemon running", "error during connect",
	"docker.sock: connect:"}

// markDocker marks a failed docker CLI call whose output says no engine answers (or whose CLI is missing) as
// errkind.DockerDaemon.
func markDocker(err error, out []byte) error {
	if err == nil {
		return nil
	}
	if notStarted(err) {
		return errkind.Mark(errkind.DockerDaemon, err)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		out = append(append([]byte{}, out...), exit.Stderr...)
	}
	for _, s := range daemonDown {
		if bytes.Contains(out, []byte(s)) || strings.Contains(err.Error(), s) {
			return errkind.Mark(errkind.DockerDaemon, err)
		}
	}
	return err
}

// markRun marks a failed local test run: a program that is not on the machine (the test command's, or an
// interpreter) is errkind.MissingRunner, a sandbox that cannot be set up errkind.Sandbox. A full disk or a refused
// permission is left to the system error under it.
func markRun(err error) error {
	if err == nil {
		return nil
	}
	var no syscall.Errno
	switch {
	case notStarted(err):
		return errkind.Mark(errkind.MissingRunner, err)
	case errors.As(err, &no):
		return err
	case strings.Contains(err.Error(), "sandbox: "):
		return errkind.Mark(errkind.Sandbox, err)
	}
	return err
}

// notStarted reports whether err says a program could not be started at all: exec.LookPath found none, or the
// program named by its path is not there or cannot be run.
func notStarted(err error) bool {
	var notFound *exec.Error
	var start *fs.PathError
	return errors.As(err, &notFound) || (errors.As(err, &start) && start.Op == "fork/exec")
}
