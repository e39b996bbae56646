package executor

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/testkit/dockertest"
)

func wantMark(t *testing.T, err error, want errkind.Kind, names ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one marked %s", want)
	}
	if k, _ := errkind.KindOf(err); k != want {
		t.Errorf("marked %q, want %s: %v", k, want, err)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("the error does not name %q: %v", n, err)
		}
	}
}

// TestFindPythonMissingRunner: no python3 that imports the runner is the machine's failure.
func TestFindPythonMissingRunner(t *testing.T) {
	fakePython(t, 1)
	_, err := FindPython("", "ctxlab_no_such_module")
	wantMark(t, err, errkind.MissingRunner, "python3-ctxlab_no_such_module")
}

// TestDockerStoppedDaemon: with no engine answering (the real docker CLI against a socket nobody listens on, or no
// CLI at all) a grade fails as the daemon's, naming it, before any container or image is asked for.
func TestDockerStoppedDaemon(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "docker.sock"))
	for name, bin := range map[string]string{"docker CLI": "docker", "no CLI": filepath.Join(t.TempDir(), "docker")} {
		t.Run(name, func(t *testing.T) {
			if name == "docker CLI" {
				if _, err := exec.LookPath(bin); err != nil {
					t.Skip("no docker CLI on this machine; the other subtest covers a missing one")
				}
			}
			_, err := Docker{}.Run(context.Background(), Request{Instance: calcInstance(), Patch: calcGold,
				Timeout: time.Minute, Config: Config{Docker: bin}})
			wantMark(t, err, errkind.DockerDaemon)
		})
	}
}

// TestDockerMissingImage: an engine that lacks the instance's image fails the grade as the image's, saying how to
// get it.
func TestDockerMissingImage(t *testing.T) {
	bin := dockertest.Engine(t)
	in := calcInstance()
	_, err := Docker{}.Run(context.Background(), Request{Instance: in, Patch: calcGold, Timeout: time.Minute,
		Config: Config{Docker: bin, Namespace: "ctxlab-no-such-namespace"}})
	wantMark(t, err, errkind.DockerImage, in.InstanceID, "docker pull")
}

// TestMarkRun: the local runner's failures to start are the machine's.
func TestMarkRun(t *testing.T) {
	_, lookErr := exec.LookPath(filepath.Join(t.TempDir(), "pytest"))
	for _, c := range []struct {
		err  error
		want errkind.Kind
	}{
		{lookErr, errkind.MissingRunner},
		{errors.New("testrun: sandbox: private temp folder: operation not supported"), errkind.Sandbox},
		{errors.New("testrun: parsing the log: unexpected EOF"), ""},
	} {
		k, _ := errkind.KindOf(markRun(c.err))
		if k != c.want {
			t.Errorf("markRun(%v) marked %q, want %q", c.err, k, c.want)
		}
	}
	if markRun(nil) != nil {
		t.Error("markRun(nil) is not nil")
	}
}
