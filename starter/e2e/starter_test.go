package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"ctxlab/internal/cluster"
	"ctxlab/results/runstate"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/cli"
	"ctxlab/starter/embedded"
)

// The starter's exit codes (docs/starter.md): the tests see them as a script does.
const (
	exitOK        = 0
	exitFail      = 1 // the work ran and failed
	exitUsage     = 2 // bad flags, a bad spec or dataset, a failed check: nothing ran
	exitPaused    = 3 // the sweep waits at its spend cap
	exitRowErrors = 4 // the sweep finished, but some rows have an error
)

// What the starter prints with --json and what status and audit print with --json, as far as the tests read it.
type (
	runSummary struct {
		OK         bool           `json:"ok"`
		Issues     int            `json:"issues"`
		Rows       int            `json:"rows"`
		RowErrors  int            `json:"row_errors"`
		ErrorKinds map[string]int `json:"error_kinds"`
		Spend      runstate.Spend `json:"spend"`
		Summary    string         `json:"summary"`
	}
	progressEvent struct {
		Event       string `json:"event"`
		IssuesDone  int    `json:"issues_done"`
		IssuesTotal int    `json:"issues_total"`
		Rows        int    `json:"rows"`
		RowErrors   int    `json:"row_errors"`
	}
	statusReport struct {
		runstate.Status
	}
	auditReport struct {
		Activities []runstate.Activity `json:"activities"`
		Totals     struct {
			Calls runstate.Spend `json:"calls"`
		} `json:"totals"`
	}
)

// serverFile is the run folder's server.json: the embedded server of the starter that owns the run.
type serverFile struct {
	PID     int    `json:"pid"`
	Address string `json:"address"`
}

func readServerFile(path string) (serverFile, bool) {
	var sf serverFile
	b, err := runfolder.ReadFile(path)
	if err != nil || json.Unmarshal(b, &sf) != nil {
		return sf, false
	}
	return sf, true
}

// runServer starts the embedded Temporal server of a run folder whose starter has exited, on the run's database,
// and dials it: what the sweep left in Temporal's history, read after the fact. The test's cleanup stops both.
func runServer(ctx context.Context, t *testing.T, dir string) client.Client {
	t.Helper()
	srv, err := embedded.Start(ctx, embedded.Options{DBFile: runfolder.TemporalDBPath(dir),
		LogFile: runfolder.TemporalLogPath(dir), Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return dialServer(ctx, t, srv.HostPort())
}

// dialServer is a client of the Temporal server at address, namespace default; the test's cleanup closes it.
func dialServer(ctx context.Context, t *testing.T, address string) client.Client {
	t.Helper()
	c, err := cluster.Dial(ctx, cluster.Options{Address: address, Namespace: "default"}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// recordedPlan is the plan of the spec starter run recorded in the run folder dir.
func recordedPlan(t *testing.T, dir string) *specs.Plan {
	t.Helper()
	b, err := runfolder.ReadFile(runfolder.Spec(dir))
	if err != nil {
		t.Fatal(err)
	}
	var e specs.Experiment
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("%s: %v", runfolder.Spec(dir), err)
	}
	plan, err := specs.BuildPlan(&e)
	if err != nil {
		t.Fatalf("%s: %v", runfolder.Spec(dir), err)
	}
	return plan
}

// runMain runs the starter in this process and returns its exit code, stdout and stderr.
func runMain(args ...string) (int, string, string) {
	var out, errb strings.Builder
	code := cli.Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// libVariant is demoVariant for overrides that name ctxlab's library.
func libVariant(t *testing.T, overrides string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "variant.jsonnet")
	src := "local ctxlab = import 'ctxlab.libsonnet';\n(import '" + demoSpec(t) + "') + " + overrides + "\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeUnder writes text to dir/name, making its folders, and returns its path.
func writeUnder(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
