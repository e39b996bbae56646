package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
)

// TestTwoStartersAtOnce starts two starters of one spec at the same moment. The one that loses the race for the run
// folder used to exit "try again" while the winner was still starting its server; it must wait for that server,
// attach, and watch the sweep to its end: both exit 0, the sweep ran once, and every row is written once.
func TestTwoStartersAtOnce(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	spec := demoVariant(t, "{ name: 'twice', dataset+: { limit: 3 }, "+referenceMethods+" }")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	type outcome struct {
		stdout, stderr bytes.Buffer
		err            error
	}
	var outs [2]outcome
	cmds := make([]*exec.Cmd, 2)
	for i := range cmds {
		cmds[i] = starter(ctx, t, "run", spec, "--runs", runs)
		cmds[i].Stdout, cmds[i].Stderr = &outs[i].stdout, &outs[i].stderr
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, cmd := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			outs[i].err = cmd.Run()
		}()
	}
	close(start)
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the starters did not finish in time")
	}
	attached := 0
	for i := range outs {
		if outs[i].err != nil {
			t.Errorf("starter %d: %v\nstdout:\n%s\nstderr:\n%s", i, outs[i].err, outs[i].stdout.String(),
				outs[i].stderr.String())
		}
		if strings.Contains(outs[i].stderr.String(), "attaching to it") {
			attached++
			t.Logf("starter %d waited for the other's server: %v", i,
				strings.Contains(outs[i].stderr.String(), "waiting to attach"))
		}
		if !strings.Contains(outs[i].stdout.String(), "results:") {
			t.Errorf("starter %d printed no summary:\n%s", i, outs[i].stdout.String())
		}
	}
	if attached != 1 {
		t.Errorf("%d starters attached to the other's server, want 1", attached)
	}

	dir := filepath.Join(runs, "twice")
	rows := readRows(t, filepath.Join(dir, "results.jsonl")) // fails on a row written twice
	if len(rows) != 3*2 {
		t.Errorf("%d rows, want 3 instances x 2 methods: %v", len(rows), keys(rows))
	}

	// One sweep: the workflow id was started once.
	c := runServer(ctx, t, dir)
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: "default", Query: "WorkflowId = 'sweep/twice'"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetExecutions()); n != 1 {
		t.Errorf("%d executions of sweep/twice, want 1", n)
	}
}
