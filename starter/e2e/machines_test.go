package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/starter/sweepclient"
	"ctxlab/testkit/e2e"
	"ctxlab/testkit/machines"
	"ctxlab/testkit/s3server"
	"ctxlab/testkit/temporalserver"
)

// deployment is a sweep spread over machines that share no disk (testkit/machines): a starter that holds the
// embedded server and submits with no workers, a worker machine for workflow,llm,cpu and one for grade, sharing
// only the Temporal server and the store.
type deployment struct {
	t    *testing.T
	ctx  context.Context
	spec string
	runs string // every worker machine's run folders are here, each machine's own
	// starterRuns holds the starter's run folders: its machine's own, but kept visible to the test (which reads
	// them as an operator on that machine would, after the starter exited).
	starterRuns string
	store       string
	shared      []string // what every machine is given or shares: binaries, the spec, a file:// store's folder
	env         []string
	flags       []string // given to the starter and every worker (the spec's --ext-str)
	starter     *proc
	address     string
	starterB    string
	workerB     string
}

func newDeployment(t *testing.T, ctx context.Context, spec, store string, shared []string, env []string) *deployment {
	machines.Require(t)
	d := &deployment{t: t, ctx: ctx, spec: spec, runs: filepath.Join(t.TempDir(), "runs"), starterRuns: t.TempDir(),
		store: store, env: env, starterB: os.Args[0], workerB: buildWorker(t)}
	// The checkout the spec imports is given to every machine too: in CI it lies under /tmp, which each has its own of.
	d.shared = append([]string{d.starterB, d.workerB, filepath.Dir(spec), e2e.RepoRoot(t)}, shared...)
	return d
}

// machine starts bin with args on a machine of its own named name.
func (d *deployment) machine(name, bin string, args ...string) *proc {
	shared := d.shared
	if bin == d.starterB {
		shared = append(slices.Clone(shared), d.starterRuns)
	}
	cmd := machines.Command(d.ctx, machines.Machine{Name: name, Private: []string{d.runs}, Shared: shared},
		bin, args...)
	cmd.Env = append(append(os.Environ(), d.env...), "CTXLAB_STORE=")
	if bin == d.starterB {
		cmd.Env = append(cmd.Env, asStarter+"=1")
	}
	return startProc(d.t, name, cmd)
}

// startStarter starts the submit-only starter and waits until it publishes its server's address.
func (d *deployment) startStarter(name string) {
	d.starter = d.machine("starter", d.starterB, append([]string{"run", d.spec, "--runs", d.starterRuns,
		"--no-worker", "--quiet", "--store", d.store}, d.flags...)...)
	var sf sweepclient.ServerFile
	for sf.Address == "" {
		select {
		case err := <-d.starter.done:
			d.t.Fatalf("the starter exited before publishing its server: %v\n%s", err, d.starter.out.String())
		case <-d.ctx.Done():
			d.t.Fatal("the starter never published its server")
		case <-time.After(100 * time.Millisecond):
		}
		if b, err := os.ReadFile(d.starterPath(name, "server.json")); err == nil {
			_ = json.Unmarshal(b, &sf)
		}
	}
	d.address = sf.Address
}

// startStarterAt starts the submit-only starter on the Temporal server at address (namespace default), which the
// deployment runs apart from the starter.
func (d *deployment) startStarterAt(address string) {
	d.address = address
	d.starter = d.machine("starter", d.starterB, "run", d.spec, "--runs", d.starterRuns, "--no-worker", "--quiet",
		"--store", d.store, "--address", address, "--namespace", "default")
}

// starterPath is a file of the starter's run folder.
func (d *deployment) starterPath(name, file string) string {
	return filepath.Join(d.starterRuns, name, file)
}

// worker starts a worker for queues on a machine of its own.
func (d *deployment) worker(name, queues string, extra ...string) *proc {
	args := append([]string{"--address", d.address, "--namespace", "default", "--runs", d.runs, "--spec", d.spec,
		"--queues", queues, "--store", d.store}, d.flags...)
	args = append(args, extra...)
	return d.machine(name, d.workerB, args...)
}

// TestSweepOnMachinesSharingOnlyTemporalAndTheStore is the deployment most clusters have: no disk shared between
// the starter and its workers, each in a mount namespace of its own. The sweep (the demo's reference methods, with
// a Go instance whose tests need the dataset's module proxy folder) must write every row once, equal to a single
// process's, and exit 0: with a file:// store (a folder all mount) and the starter's embedded Temporal server, and
// with a real S3 server (Versity's gateway) and the upstream Temporal server (its own main, testkit/temporalserver),
// not ctxlab's build of it; the grade worker is killed with SIGKILL mid-sweep and another takes its place on a fresh
// machine. Before the rows came back through the workflows, such a starter printed 0 rows and exited 0. On the
// upstream server, which outlives the starter, `starter status` and `starter report` with --address on yet another
// machine see the starter's rows.
func TestSweepOnMachinesSharingOnlyTemporalAndTheStore(t *testing.T) {
	t.Parallel()
	spec := demoVariant(t, "{ name: 'multi', "+referenceMethods+", debug: { slow_activities: '300ms' }, "+
		"limits+: { concurrency: 3, queues: { grade: { concurrency: 2 }, llm: { rate: 50 } } } }")
	temporalserver.Build(t) // a first build takes minutes: beside the reference run and the first deployment
	refRuns := t.TempDir()
	reference := startStarter(t, 10*time.Minute, "run", spec, "--runs", refRuns, "--quiet")
	var wantRows map[results.Key]results.Row
	for _, store := range []string{"file", "s3"} {
		t.Run(store, func(t *testing.T) {
			var upstream *temporalserver.Server
			if store == "s3" {
				upstream = temporalserver.Start(t, "default")
				t.Logf("the upstream Temporal server %s at %s", upstream.Version, upstream.Address)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			var d *deployment
			if store == "file" {
				dir := filepath.Join(t.TempDir(), "store")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				d = newDeployment(t, ctx, spec, "file://"+dir, []string{dir}, nil)
				d.startStarter("multi")
			} else {
				s := s3server.Start(t)
				d = newDeployment(t, ctx, spec, s.URL(), nil, s.Env())
				d.startStarterAt(upstream.Address)
			}
			d.worker("worker-cpu", "workflow,llm,cpu")
			grader := d.worker("worker-grade", "grade")
			attempts := d.starterPath("multi", "attempts.jsonl")
			e2e.WaitFor(t, "a grade to start", 5*time.Minute, nil, func() bool { return grades(attempts)["start"] > 0 })
			if err := grader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-grader.done
			rowsBefore := e2e.RowCount(d.starterPath("multi", "results.jsonl"))
			d.worker("worker-grade-2", "grade")
			select {
			case err := <-d.starter.done:
				if err != nil {
					t.Fatalf("starter: %v\n%s", err, d.starter.out.String())
				}
			case <-ctx.Done():
				t.Fatal("the sweep did not complete")
			}
			if wantRows == nil {
				if _, stderr, code := reference(); code != 0 {
					t.Fatalf("single-process reference run: exit %d\n%s", code, stderr)
				}
				wantRows = readRows(t, filepath.Join(refRuns, "multi", "results.jsonl"))
			}
			got := readRows(t, d.starterPath("multi", "results.jsonl"))
			e2e.SameRows(t, got, wantRows, "grade_seconds")
			if rowsBefore >= len(wantRows) {
				t.Errorf("the kill came too late: all %d rows were already written", rowsBefore)
			}
			if g := grades(attempts); g["start"] < 2 {
				t.Errorf("grade attempts gathered from the store: %v", g)
			}
			// Nothing of the run reached a disk but the starter's and the store.
			if _, err := os.Stat(filepath.Join(d.runs, "multi")); err == nil {
				t.Errorf("a machine's run folder is on the host: %s", filepath.Join(d.runs, "multi"))
			}
			if store == "s3" {
				d.researcher(got)
			}
		})
		if t.Failed() {
			return
		}
	}
}

// researcher runs starter status and starter report with --address on a machine of its own that has neither the
// starter's run folder nor its disk, after the starter exited: they must see the starter's rows.
func (d *deployment) researcher(want map[results.Key]results.Row) {
	t := d.t
	runs := t.TempDir()
	m := machines.Machine{Name: "researcher", Private: []string{d.runs}, Shared: append(slices.Clone(d.shared), runs)}
	run := func(args ...string) (string, int) {
		cmd := machines.Command(d.ctx, m, d.starterB, append(args, "--runs", runs, "--address", d.address,
			"--namespace", "default", "--store", d.store)...)
		cmd.Env = append(append(os.Environ(), d.env...), asStarter+"=1", "CTXLAB_STORE=")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if asExit(err, &ee) {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	out, code := run("status", "multi")
	if code != 0 || !strings.Contains(out, "state:     finished") || !strings.Contains(out, "11 done, 0 failed") {
		t.Errorf("starter status --address on another machine: exit %d\n%s", code, out)
	}
	e2e.SameRows(t, readRows(t, filepath.Join(runs, "multi", "results.jsonl")), want)
	out, code = run("report", "multi", "--no-figures", "--resamples", "200")
	if _, err := os.Stat(filepath.Join(runs, "multi", "report.md")); code != 0 || err != nil {
		t.Errorf("starter report --address on another machine: exit %d, %v\n%s", code, err, out)
	}
}

// TestMismatchedStoreRefusedBeforeRunning: a worker whose store is not the starter's (another folder, as a worker
// given the wrong --store on its machine has) makes the starter refuse the sweep before it runs anything, naming the
// worker's machine; the worker's own store probe refuses an S3 URL that reaches no server within seconds.
func TestMismatchedStoreRefusedBeforeRunning(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	spec := demoVariant(t, "{ name: 'mismatch', "+referenceMethods+" }")
	good, bad := filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "other")
	for _, dir := range []string{good, bad} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := newDeployment(t, ctx, spec, "file://"+good, []string{good, bad}, nil)
	// A starter of another sweep holds the server; with no workflow worker its sweep waits, so that the worker of
	// the wrong store polls (the grade queue) before the starter under test makes its handshake.
	holder := demoVariant(t, "{ name: 'holder', "+referenceMethods+" }")
	d.shared = append(d.shared, filepath.Dir(holder))
	d.spec = holder
	d.startStarter("holder")
	d.spec = spec
	d.worker("worker-wrong-store", "grade", "--store", "file://"+bad)
	time.Sleep(3 * time.Second) // its first polls
	second := func(args ...string) (string, int) {
		cmd := machines.Command(ctx, machines.Machine{Name: "starter-2", Private: []string{d.runs}, Shared: d.shared},
			d.starterB, args...)
		cmd.Env = append(os.Environ(), asStarter+"=1", "CTXLAB_STORE=")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if asExit(err, &ee) {
			return string(out), ee.ExitCode()
		}
		return string(out), 0
	}
	out, code := second("run", spec, "--runs", d.runs, "--address", d.address, "--no-worker", "--quiet", "--store",
		d.store)
	if code != exitUsage || !strings.Contains(out, "refusing to run the sweep") ||
		!strings.Contains(out, "worker-wrong-store") || !strings.Contains(out, "does not share this starter's store") {
		t.Errorf("starter with a worker of another store: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "started the sweep") {
		t.Error("the sweep started before the refusal")
	}
	// starter check asks the same workers.
	out, code = second("check", spec, "--runs", d.runs, "--address", d.address, "--no-worker", "--store", d.store)
	if code != exitUsage || !strings.Contains(out, "worker-wrong-store") {
		t.Errorf("starter check with a worker of another store: exit %d\n%s", code, out)
	}

	// An S3 URL with no server behind it: the worker says so within the probe's time, naming the store.
	started := time.Now()
	wcmd := exec.CommandContext(ctx, d.workerB, "--address", d.address, "--queues", "cpu", "--store",
		"s3://ctxlab?region=us-east-1&use_path_style=true&disable_https=true&endpoint=http://127.0.0.1:1")
	wcmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=y")
	wout, werr := wcmd.CombinedOutput()
	if werr == nil || !strings.Contains(string(wout), "cannot be used") || time.Since(started) > time.Minute {
		t.Errorf("worker with an unreachable S3 store, after %s: %v\n%s", time.Since(started), werr, wout)
	}
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}
