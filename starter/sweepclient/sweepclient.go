// Package sweepclient is the starter's sweep client: it compiles a spec, locks and prepares the run folder,
// stores the plan, connects to (or starts) the run's Temporal server, submits the sweep or attaches to it, repairs
// and collects its rows and watches it to its end; and it reads a run's state for status, audit and report. It is
// plain Go over what it is given (options, writers, a Temporal client); starter/cli only parses flags and calls it.
package sweepclient

import (
	"context"
	"io"

	"ctxlab/dataset/swebench"
	"ctxlab/internal/cluster"
	"ctxlab/jsonnet"
	"ctxlab/results"
	"ctxlab/specs"
)

// Options are what starter run was asked to do: the Spec to run into a folder under Runs, the Cluster to run it on
// (no address: the run folder's embedded server; its namespace is required either way), the content Store and the
// response Cache (empty: the run folder's).
type Options struct {
	Spec    string
	Runs    string
	Cluster cluster.Options
	Store   string
	Quiet   bool
	JSON    bool
	// NoWorker only submits and watches the sweep: workers run elsewhere.
	NoWorker bool
	Cache    string
	NoCache  bool
	UI       UIOptions
	// MaxHistory overrides the sweep's continue-as-new threshold (for tests).
	MaxHistory int
	// InfraWaits overrides how often a node waits for the endpoint before its rows fail (-1: never; for tests).
	InfraWaits int
	jsonnet.Flags

	// AllowErrors exits 0 when the sweep finished although some rows have errors.
	AllowErrors bool
	// Retry names kinds and classes of failed rows that a re-run of the finished sweep runs again besides those
	// every re-run retries (the model's failures included when asked).
	Retry RetrySelection
	// FreshDB moves a damaged temporal.db aside and starts the sweep over on a new one.
	FreshDB bool
	// NoCheck skips Check.
	NoCheck bool
	// Check runs, before anything is paid, the checks that the sweep can finish, writing its notes and problems to
	// w; it reports whether there was no problem. workers says this process runs the workers: only then are the
	// repositories, graders and endpoints its own to judge. Nil checks nothing.
	Check func(ctx context.Context, e *specs.Experiment, plan *specs.Plan, instances []swebench.Instance,
		runDir string, workers bool, spec string, w io.Writer) bool

	// tookOver is set when this starter was attached to another's server and runs the sweep again after that
	// server went away (once).
	tookOver bool
	// retryOnly limits a round's retry to these rows: those that failed (of a kind a re-run retries) in a sweep this
	// starter resumed after a stopped starter left it running.
	retryOnly map[results.Key]bool
}

// Run runs the sweep and returns the exit code; a sweep a stopped starter left running (a crash, a full disk) is
// resumed, and once it finishes, its rows that failed by no fault of the model are run again, once, as a re-run of
// a finished sweep runs them: the re-run after the fix completes the sweep, whichever moment the last starter
// stopped at.
func Run(o Options, stdout, stderr io.Writer) int {
	code, again := runSweepRound(o, stdout, stderr)
	if len(again) == 0 {
		return code
	}
	o.retryOnly = again
	code, _ = runSweepRound(o, stdout, stderr)
	return code
}
