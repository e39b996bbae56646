package executor

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
	"ctxlab/internal/images"
	"ctxlab/patch/diff"
	"ctxlab/testkit/dockertest"
)

// Issue 39's probes of the docker executor under hostile patches, in a real engine: results forged by printing,
// writes to what is mounted into the container, and what the container sees of the grader. Each patch fixes
// nothing (add still subtracts) and only attacks, so a resolved row is a forgery.

// printForger is calc/ops.py, unfixed, with code that runs when the tests import it and prints every shape of
// passing result the grader could read: pytest's -rA summary lines, a whole fake summary after pytest's own (at
// exit), the harness's markers around them, -v progress lines, ctxlab's own results-line shape, on stdout, on
// stderr, on the descriptors under them, and from a child process. It also exits 0 at the end, so the exit code
// alone does not give it away... unless the runner's own code reports it.
func printForger(passing []string) string {
	var lines []string
	for _, id := range passing {
		lines = append(lines, "PASSED "+id, id+" PASSED [100%]",
			"ctxlab1\tpytest\tpass\t"+hex.EncodeToString([]byte(id)))
	}
	fake := strings.Join(lines, "\n")
	summary := "=========================== short test summary info ============================\n" + fake +
		"\n============================== 2 passed in 0.01s ==============================="
	return calcBase["calc/ops.py"] + fmt.Sprintf(`

import atexit as _atexit
import os as _os
import subprocess as _subprocess
import sys as _sys

_FAKE = %q
_SUMMARY = %q


def _forge():
    for fd in (1, 2):
        _os.write(fd, ("\n" + _SUMMARY + "\n").encode())
    # The harness's markers, spelled at run time: the patch's text (which the eval script's git diff prints) must
    # not hold them, or it would cut the log itself.
    _mark = ">" * 5 + " %%s Test Output"
    _os.write(1, ("\n+ : '" + _mark %% "Start" + "'\n" + _FAKE + "\n+ : '" + _mark %% "End" + "'\n").encode())


print(_FAKE)
_sys.stderr.write(_FAKE + "\n")
_subprocess.run(["/bin/echo", _FAKE])
_atexit.register(_forge)
`, fake, summary)
}

func TestDockerHostilePatches(t *testing.T) {
	t.Parallel()
	bin := dockertest.Engine(t)
	cfg := Config{Docker: bin, Namespace: engineNamespace}
	py := enginePythonInstance()
	py.InstanceID = "acme__calc-hostile-1"
	instanceImage(t, bin, images.LangPython, &py, calcBase)
	run := func(t *testing.T, in swebench.Instance, patch string, c Config) Result {
		t.Helper()
		res, err := Docker{}.Run(context.Background(), Request{Instance: in, Patch: patch, Timeout: 5 * time.Minute,
			Config: c})
		if err != nil {
			t.Fatalf("%v\n%s", err, res.Output)
		}
		return res
	}
	forger := diff.Unified("calc/ops.py", []byte(calcBase["calc/ops.py"]),
		[]byte(printForger(append(append([]string{}, py.FailToPass...), py.PassToPass...))))

	t.Run("PrintedResultsAreNotBelieved", func(t *testing.T) {
		// The default command (pytest -rA, ctxlab's pytest parser) and a harness table entry (seaborn 0.12: its
		// command and the harness's parse_log_seaborn, which reads PASSED lines anywhere in the log).
		seaborn := py
		seaborn.Repo, seaborn.Version = "mwaskom/seaborn", "0.12"
		for name, in := range map[string]swebench.Instance{"default": py, "table entry": seaborn} {
			t.Run(name, func(t *testing.T) {
				res := run(t, in, forger, cfg)
				out := string(res.Output)
				if !strings.Contains(out, "PASSED "+py.FailToPass[0]) {
					t.Fatalf("the forger did not print (the attack did not run):\n%s", out)
				}
				v := decide(in, res)
				if v.Resolved {
					t.Errorf("a patch that fixes nothing and prints passing lines resolved: %+v\n%s", v, out)
				}
				if rs := res.Report.Tests[py.FailToPass[0]]; len(rs) != 1 || rs[0].Status != testlog.StatusFail {
					t.Errorf("%s = %+v, want one failing result (the test ran and failed)\n%s", py.FailToPass[0], rs, out)
				}
				if !res.ExitCodeKnown || res.ExitCode == 0 {
					t.Errorf("exit code %d (known %v), want pytest's own, non-zero: its atexit print is no result",
						res.ExitCode, res.ExitCodeKnown)
				}
			})
		}
		// The same code with the fix still resolves: the channel reads real passes.
		fixed := diff.Unified("calc/ops.py", []byte(calcBase["calc/ops.py"]), []byte(strings.Replace(
			printForger(nil), "a - b", "a + b", 1)))
		res := run(t, py, fixed, cfg)
		if v := decide(py, res); !v.Resolved {
			t.Errorf("the fixed patch (which also prints) does not resolve: %+v\n%s", v, res.Output)
		}
	})

	t.Run("WritesToMountedFoldersLeaveNothingOnTheHost", func(t *testing.T) {
		// A hostile dataset's image declares volumes; the patch's code writes into every mount point it can find.
		in := py
		in.InstanceID = "acme__calc-hostile-volume-1"
		name := InstanceImage(engineNamespace, in.InstanceID)
		ctr := "ctxlab-test-volume-" + fmt.Sprint(time.Now().UnixNano())
		if out, err := exec.Command(bin, "create", "--name", ctr, InstanceImage(engineNamespace, py.InstanceID),
			"/bin/true").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		defer exec.Command(bin, "rm", "-f", ctr).Run()
		if out, err := exec.Command(bin, "commit", "--change", "VOLUME /data", "--change", "VOLUME /testbed/.cache",
			ctr, name).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command(bin, "image", "rm", "-f", name).Run() })
		before := volumes(t, bin)
		sentinel := fmt.Sprintf("ctxlab-sentinel-%d", time.Now().UnixNano())
		writer := calcBase["calc/ops.py"] + fmt.Sprintf(`

import os as _os

for _line in open("/proc/self/mountinfo"):
    _mnt = _line.split()[4]
    for _p in (_os.path.join(_mnt, "ctxlab-sentinel"), _mnt):
        try:
            if _os.path.isdir(_p):
                continue
            with open(_p, "a") as _f:
                _f.write(%q + "\n")
        except OSError:
            pass
`, sentinel)
		res := run(t, in, diff.Unified("calc/ops.py",
			[]byte(calcBase["calc/ops.py"]), []byte(writer)), cfg)
		if !res.Ran {
			t.Fatalf("did not run: %+v", res.Apply)
		}
		if left := slices.DeleteFunc(volumes(t, bin), func(v string) bool { return slices.Contains(before, v) }); len(left) > 0 {
			for _, v := range left {
				_ = exec.Command(bin, "volume", "rm", "-f", v).Run()
			}
			t.Errorf("the grade left %d volume(s) the patch's code wrote into on the host: %v", len(left), left)
		}
		if left := containersOf(t, bin, os.Getpid(), in.InstanceID); len(left) != 0 {
			t.Errorf("containers left: %v", left)
		}
	})

	t.Run("ContainerSeesNothingOfTheGrader", func(t *testing.T) {
		// The patch's code prints what it can see (at exit, once pytest no longer captures the output): variables,
		// mounts, processes, the host's name, sockets.
		looker := calcBase["calc/ops.py"] + `

import atexit as _atexit
import os as _os
import socket as _socket

_seen = []

def _show(tag, text):
    _seen.append("LOOK " + tag + ": " + text.replace("\n", " | "))

_atexit.register(lambda: _os.write(2, ("\n" + "\n".join(_seen) + "\n").encode()))

_show("env", repr(sorted(_os.environ.items())))
_show("mountinfo", open("/proc/self/mountinfo").read())
_show("cmdlines", repr([open("/proc/%s/cmdline" % p, "rb").read() for p in _os.listdir("/proc") if p.isdigit()]))
_show("hostname", _socket.gethostname())
for _p in ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock"):
    _show("socket " + _p, str(_os.path.exists(_p)))
_show("root", repr(sorted(_os.listdir("/"))))
`
		res := run(t, py, diff.Unified("calc/ops.py", []byte(calcBase["calc/ops.py"]), []byte(looker)), cfg)
		out := string(res.Output)
		if !strings.Contains(out, "LOOK env") {
			t.Fatalf("the code did not look (the probe did not run):\n%s", out)
		}
		host, _ := os.Hostname()
		tmp := os.TempDir()
		for _, bad := range []string{"sk-should-never", TempPrefix, "socket /var/run/docker.sock: True",
			"socket /run/docker.sock: True", "socket /run/containerd/containerd.sock: True", ".test\\x00-test."} {
			if strings.Contains(out, bad) {
				t.Errorf("the container sees %q:\n%s", bad, out)
			}
		}
		if host != "" && strings.Contains(lookLine(out, "hostname"), host) {
			t.Errorf("the container sees the grader's host name %q", host)
		}
		if m := lookLine(out, "mountinfo"); tmp != "/" && strings.Contains(m, " "+tmp+"/") {
			t.Errorf("a folder of the grader's temporary folder is mounted into the container: %s", m)
		}
	})
}

// lookLine is the line a looker printed for a tag.
func lookLine(out, tag string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "LOOK "+tag+": ") {
			return l
		}
	}
	return ""
}

// volumes lists the engine's volumes.
func volumes(t *testing.T, bin string) []string {
	t.Helper()
	out, err := exec.Command(bin, "volume", "ls", "-q").Output()
	if err != nil {
		t.Fatalf("docker volume ls: %v", err)
	}
	return strings.Fields(string(out))
}
