package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/api/workflowservice/v1"

	"ctxlab/internal/cluster"
	"ctxlab/starter/sweepclient"
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
	conn, err := sweepclient.Connect(ctx, cluster.Options{Namespace: "default"}, dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := conn.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: "default", Query: "WorkflowId = 'sweep/twice'"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetExecutions()); n != 1 {
		t.Errorf("%d executions of sweep/twice, want 1", n)
	}
}

// TestLockOrWait checks the wait for another starter's server without running one: a server.json left by an earlier
// process is never attached to, the holder's own is, and a holder that goes away leaves the lock to the waiter.
func TestLockOrWait(t *testing.T) {
	dir := t.TempDir()
	lockPath, sfPath := filepath.Join(dir, "starter.lock"), filepath.Join(dir, "server.json")
	ctx := context.Background()
	unlock, published, err := sweepclient.LockOrWait(ctx, lockPath, sfPath, time.Second, zerolog.Nop())
	if err != nil || published != nil {
		t.Fatalf("free lock: published %v, err %v", published, err)
	}
	if holder := sweepclient.LockHolder(lockPath); holder != os.Getpid() {
		t.Errorf("the lock file names pid %d, want this process's %d", holder, os.Getpid())
	}
	write := func(sf sweepclient.ServerFile) {
		b, _ := json.Marshal(sf)
		if err := os.WriteFile(sfPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// An earlier starter's server.json: another pid. The waiter must not sweepclient.Dial it, and says why it gave up.
	write(sweepclient.ServerFile{PID: os.Getpid() + 1, Address: "127.0.0.1:1"})
	if _, published, err := sweepclient.LockOrWait(ctx, lockPath, sfPath, 300*time.Millisecond, zerolog.Nop()); err == nil ||
		!strings.Contains(err.Error(), "published no server") {
		t.Errorf("stale server.json: published %v, err %v; want the wait to end with an error", published, err)
	}

	// The holder publishes while the other waits: it attaches to that.
	go func() {
		time.Sleep(300 * time.Millisecond)
		write(sweepclient.ServerFile{PID: os.Getpid(), Address: "127.0.0.1:7233"})
	}()
	_, published, err = sweepclient.LockOrWait(ctx, lockPath, sfPath, 5*time.Second, zerolog.Nop())
	if err != nil || published == nil || published.Address != "127.0.0.1:7233" {
		t.Errorf("published by the holder: got %+v, err %v", published, err)
	}

	// The holder exits before publishing: the waiter takes the lock and runs the server itself.
	write(sweepclient.ServerFile{PID: os.Getpid() + 1, Address: "127.0.0.1:1"})
	go func() {
		time.Sleep(300 * time.Millisecond)
		unlock()
	}()
	unlock2, published, err := sweepclient.LockOrWait(ctx, lockPath, sfPath, 5*time.Second, zerolog.Nop())
	if err != nil || published != nil {
		t.Fatalf("after the holder left: published %+v, err %v; want the lock", published, err)
	}
	unlock2()
}
