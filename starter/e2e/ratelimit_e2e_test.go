package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/starter/sweepclient"
	"ctxlab/testkit/fakeopenai"
)

// TestHourLongRetryAfterWaitsOnATimer: an endpoint that answers 429 with Retry-After: 3600 does not fail the row
// within seconds, as it did: the step's Issue workflow waits on a durable timer of an hour (found in its history
// through the starter's embedded server) and no row is recorded meanwhile.
func TestHourLongRetryAfterWaitsOnATimer(t *testing.T) {
	t.Parallel()
	srv, spec, runs, dir := hourLimitedSweep(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := starter(ctx, t, "run", spec, "--runs", runs, "--ext-str", "model=openai")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, done := make(chan error, 1), make(chan struct{})
	go func() {
		exited <- cmd.Wait()
		close(done)
	}()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		<-done
	}()

	var found time.Duration
	for found == 0 {
		select {
		case err := <-exited:
			t.Fatalf("the starter ended (%v) instead of waiting; stderr:\n%s", err, stderr.String())
		case <-ctx.Done():
			t.Fatalf("no timer within the time allowed; stderr:\n%s", stderr.String())
		case <-time.After(time.Second):
		}
		found = hourTimer(ctx, t, dir)
	}
	if found < 59*time.Minute || found > 61*time.Minute {
		t.Errorf("the issue waits %v, want the hour the endpoint asked for", found)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "results.jsonl")); err == nil && len(bytes.TrimSpace(b)) > 0 {
		t.Errorf("rows were recorded while the step waits:\n%s", b)
	}
	if srv.Calls() != 1 {
		t.Errorf("%d calls; want the one rate limited", srv.Calls())
	}
}

// hourLimitedSweep is a one-row sweep ("wait") against an endpoint that answers every call with a 429 asking to wait
// an hour, until the test changes that (srv.SetFailWhen).
func hourLimitedSweep(t *testing.T) (srv *fakeopenai.Server, spec, runs, dir string) {
	t.Helper()
	srv = fakeopenai.New(fakeopenai.WithRetryAfter(time.Hour),
		fakeopenai.WithFailWhen(func(fakeopenai.ChatRequest) fakeopenai.Failure { return fakeopenai.RateLimit }))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	setStarterEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY=")
	spec = demoVariant(t, "{ name: 'wait', dataset+: { limit: 1 }, anchor:: null, methods: super.methods[0:1] }")
	runs = t.TempDir()
	return srv, spec, runs, filepath.Join(runs, "wait")
}

// hourTimer returns the duration of a timer started in the history of the run's Issue workflow, 0 while there is
// none (or the server, the ledger or the workflow are not there yet).
func hourTimer(ctx context.Context, t *testing.T, dir string) time.Duration {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "server.json"))
	if err != nil {
		return 0
	}
	var sf sweepclient.ServerFile
	if json.Unmarshal(b, &sf) != nil {
		return 0
	}
	calls, _, err := runlog.Read[runlog.Call](filepath.Join(dir, runfolder.CallsFile))
	if err != nil || len(calls) == 0 {
		return 0
	}
	c, err := client.Dial(client.Options{HostPort: sf.Address})
	if err != nil {
		return 0
	}
	defer c.Close()
	it := c.GetWorkflowHistory(ctx, "issue/wait/"+calls[0].Instance, "", false,
		enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return 0
		}
		if a := e.GetTimerStartedEventAttributes(); a != nil {
			return a.GetStartToFireTimeout().AsDuration()
		}
	}
	return 0
}

// TestAttachCutsEndpointWaitShort (issue 28, item 5): once the endpoint that asked for an hour's wait is healthy
// again, a second starter run of the sweep attaches, says what the sweep waits for and until when, and has the
// waiting issue try again at once: both starters end with the sweep finished and its row free of errors, within
// minutes. Before, the attaching starter woke only issues paused at the spend cap, said nothing, and the sweep sat
// out the hour.
func TestAttachCutsEndpointWaitShort(t *testing.T) {
	t.Parallel()
	srv, spec, runs, dir := hourLimitedSweep(t)
	first := startStarter(t, 8*time.Minute, "run", spec, "--runs", runs, "--ext-str", "model=openai")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for hourTimer(ctx, t, dir) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the sweep never waited on the endpoint's hour")
		case <-time.After(500 * time.Millisecond):
		}
	}
	srv.SetFailWhen(nil) // the endpoint is back
	_, stderr, code := runStarter(t, 5*time.Minute, "run", spec, "--runs", runs, "--ext-str", "model=openai")
	if code != exitOK || !strings.Contains(stderr, "waits for the endpoint (rate_limit) until") ||
		!strings.Contains(stderr, "asking it to try again now") {
		t.Errorf("the attached starter: exit %d, want 0, saying what the sweep waited for:\n%s", code, stderr)
	}
	if _, stderr, code := first(); code != exitOK {
		t.Errorf("the first starter: exit %d, want 0\n%s", code, stderr)
	}
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	for k, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("row %v: %v", k, r[results.FieldError])
		}
	}
	if len(rows) != 1 || srv.Calls() != 2 {
		t.Errorf("%d rows, %d calls; want 1 row and the rate-limited call asked once more", len(rows), srv.Calls())
	}
}
