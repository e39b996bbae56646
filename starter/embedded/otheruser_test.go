package embedded

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchpb "go.temporal.io/api/batch/v1"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/api/historyservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"ctxlab/grading/sandbox"
)

// attackEnv makes the test binary attack a server's ports (see attackPorts) instead of running tests.
const attackEnv = "EMBEDDED_TEST_ATTACK"

func TestMain(m *testing.M) {
	if job := os.Getenv(attackEnv); job != "" {
		os.Exit(attackPorts(job))
	}
	os.Exit(m.Run())
}

// attackJob is what an attacking process is asked to do: terminate the workflows through every port.
type attackJob struct {
	Namespace, NamespaceID string
	IDs                    []string
	Frontend               int
	Internode              []int // history, matching and worker gRPC ports
	UI                     int
	Unknown                []int // listeners the test cannot name: tried as the frontend's HTTP API
}

// attackResult is one attempt: which port, what was tried, and the error (empty when it went through).
type attackResult struct {
	Port       int
	What, Code string
	Err        string
}

// attackPorts runs as another uid: every way of terminating the job's workflows it knows, one result per line.
func attackPorts(jobText string) int {
	var job attackJob
	if err := json.Unmarshal([]byte(jobText), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := json.NewEncoder(os.Stdout)
	report := func(port int, what string, err error) {
		r := attackResult{Port: port, What: what}
		if err != nil {
			r.Err, r.Code = err.Error(), status.Code(err).String()
		}
		_ = out.Encode(r)
	}
	addr := func(p int) string { return net.JoinHostPort(host, strconv.Itoa(p)) }
	conn := func(p int, creds credentials.TransportCredentials) *grpc.ClientConn {
		cc, err := grpc.NewClient(addr(p), grpc.WithTransportCredentials(creds))
		if err != nil {
			panic(err)
		}
		return cc
	}
	terminate := func(id string) *workflowservice.TerminateWorkflowExecutionRequest {
		return &workflowservice.TerminateWorkflowExecutionRequest{Namespace: job.Namespace, Reason: "attack",
			WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id}}
	}
	callCtx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 10*time.Second) }

	fe := workflowservice.NewWorkflowServiceClient(conn(job.Frontend, insecure.NewCredentials()))
	for _, id := range job.IDs {
		c, done := callCtx()
		_, err := fe.TerminateWorkflowExecution(c, terminate(id))
		done()
		report(job.Frontend, "frontend TerminateWorkflowExecution "+id, err)
	}
	c, done := callCtx()
	_, err := fe.StartBatchOperation(c, &workflowservice.StartBatchOperationRequest{Namespace: job.Namespace,
		JobId: "attack", Reason: "attack", VisibilityQuery: "WorkflowType='Issue'",
		Operation: &workflowservice.StartBatchOperationRequest_TerminationOperation{
			TerminationOperation: &batchpb.BatchOperationTermination{}}})
	done()
	report(job.Frontend, "frontend StartBatchOperation terminate", err)

	for _, p := range job.Internode {
		for name, creds := range map[string]credentials.TransportCredentials{
			"plain":                   insecure.NewCredentials(),
			"TLS without client cert": credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}),
		} {
			hs := historyservice.NewHistoryServiceClient(conn(p, creds))
			c, done := callCtx()
			_, err := hs.TerminateWorkflowExecution(c, &historyservice.TerminateWorkflowExecutionRequest{
				NamespaceId: job.NamespaceID, TerminateRequest: terminate(job.IDs[0])})
			done()
			report(p, "history TerminateWorkflowExecution, "+name, err)
		}
	}

	batch := `{"jobId":"attack","namespace":"` + job.Namespace + `","visibilityQuery":"WorkflowType='Issue'",` +
		`"reason":"attack","terminationOperation":{}}`
	httpPost := func(p int, path string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr(p)+path, strings.NewReader(batch))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "text/plain") // no CORS preflight from a browser either
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("HTTP %s", resp.Status)
		}
		return nil
	}
	if job.UI != 0 {
		report(job.UI, "UI batch terminate", httpPost(job.UI, "/api/v1/namespaces/"+job.Namespace+"/batch-operations/attack"))
		report(job.UI, uiRead, httpGet(ctx, "http://"+addr(job.UI)+"/api/v1/namespaces/"+job.Namespace+"/workflows",
			job.IDs))
	}
	for _, p := range job.Unknown {
		report(p, "HTTP API batch terminate", httpPost(p, "/api/v1/namespaces/"+job.Namespace+"/batch-operations/attack"))
	}
	return 0
}

// uiRead names the attack that reads the sweep's workflows through the Web UI (issue 39: the UI served any local
// user the workflow list and the Issue histories).
const uiRead = "UI list workflows"

// httpGet reads url and fails unless it answers 2xx with every one of ids in its body.
func httpGet(ctx context.Context, url string, ids []string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %s: %.200s", resp.Status, body)
	}
	for _, id := range ids {
		if !strings.Contains(string(body), id) {
			return fmt.Errorf("HTTP %s without workflow %s", resp.Status, id)
		}
	}
	return nil
}

// listeningPorts are the TCP ports this process listens on.
func listeningPorts(t *testing.T) []int {
	t.Helper()
	ls, err := listeners()
	if err != nil {
		t.Fatal(err)
	}
	var ports []int
	for _, l := range ls {
		ports = append(ports, l.port)
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// runAttack runs attackPorts as uid (the test's own when cred is nil) and returns its results.
func runAttack(t *testing.T, exe string, job attackJob, cred *syscall.Credential) []attackResult {
	t.Helper()
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = []string{attackEnv + "=" + string(b)}
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("attacker: %v\n%s", err, stderr.String())
	}
	var rs []attackResult
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var r attackResult
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("attacker's output: %v\n%s", err, out)
		}
		rs = append(rs, r)
	}
	return rs
}

// TestEveryPortRefusesAnotherUser runs the run folder's embedded server and its Web UI, with two Issue workflows
// running (no worker), and lets a process of another uid (the sandbox's, as graded code would run) try to terminate
// them through every port the process listens on: the frontend's gRPC API (a terminate, a batch terminate), the
// history, matching and worker services' gRPC ports (history's own terminate, in plain text and over TLS without a
// client certificate), the UI (a batch terminate), and any other listener as the frontend's HTTP API (the text/plain
// batch terminate that went through on it). Every attempt must be refused and both workflows stay running; the same
// attacker running as the server's own uid terminates a third workflow through the frontend, so the attacks are
// real ones.
func TestEveryPortRefusesAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the attacker as another uid")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const ns = "attack-test"
	srv, err := Start(ctx, Options{DBFile: filepath.Join(dir, "temporal.db"), LogFile: filepath.Join(dir, "temporal.log"),
		Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	ui, err := srv.StartUI(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: ns, Logger: quietSDKLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ids := []string{"issue/" + ns + "/a", "issue/" + ns + "/b"}
	const control = "issue/" + ns + "/control"
	for _, id := range ids {
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "nobody-polls"}, "Issue"); err != nil {
			t.Fatal(err)
		}
	}
	// Of another type, so that a batch terminate of every Issue does not reach it.
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: control, TaskQueue: "nobody-polls"}, "Control"); err != nil {
		t.Fatal(err)
	}
	desc, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}

	p := srv.Ports()
	uiPort, err := strconv.Atoi(ui.URL()[strings.LastIndex(ui.URL(), ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	job := attackJob{Namespace: ns, NamespaceID: desc.GetNamespaceInfo().GetId(), IDs: ids, Frontend: p.Frontend,
		Internode: []int{p.History, p.Matching, p.Worker}, UI: uiPort}
	known := append([]int{job.Frontend, job.UI}, job.Internode...)
	for _, port := range listeningPorts(t) {
		if !slices.Contains(known, port) {
			t.Errorf("the process listens on port %d, which is none of the server's %+v nor the UI's %d", port, p, uiPort)
			job.Unknown = append(job.Unknown, port)
		}
	}

	// The attacker is this test binary, copied where the other uid can run it.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	binDir := t.TempDir()
	for _, d := range []string{filepath.Dir(binDir), binDir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	attacker := filepath.Join(binDir, "attacker")
	if err := os.WriteFile(attacker, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	other := &syscall.Credential{Uid: sandbox.DefaultUID, Gid: sandbox.DefaultUID, Groups: []uint32{}}
	results := runAttack(t, attacker, job, other)
	attacked := map[int]bool{}
	for _, r := range results {
		attacked[r.Port] = true
		t.Logf("port %d, %s: %s %s", r.Port, r.What, r.Code, r.Err)
		switch {
		case r.Err == "":
			t.Errorf("another uid got through: port %d, %s", r.Port, r.What)
		case r.Port == job.Frontend && r.Code != codes.PermissionDenied.String():
			t.Errorf("port %d, %s: %s %s; want the frontend's refusal (PermissionDenied)", r.Port, r.What, r.Code, r.Err)
		case slices.Contains(job.Internode, r.Port) && r.Code != codes.Unavailable.String():
			// Unimplemented or NotFound would mean the call reached a service's handlers.
			t.Errorf("port %d, %s: %s %s; want no connection (Unavailable)", r.Port, r.What, r.Code, r.Err)
		}
	}
	for _, port := range append(known, job.Unknown...) {
		if !attacked[port] {
			t.Errorf("port %d was not attacked", port)
		}
	}

	time.Sleep(2 * time.Second) // a batch job accepted would have begun terminating by now
	running := func(id string) bool {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		return d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}
	for _, id := range ids {
		if !running(id) {
			t.Errorf("workflow %s was stopped by another uid", id)
		}
	}

	// Control: the same attacker as the server's own uid terminates through the frontend and reads the workflows
	// through the UI.
	own := runAttack(t, attacker, attackJob{Namespace: ns, IDs: []string{control}, Frontend: p.Frontend, UI: uiPort}, nil)
	if len(own) == 0 || own[0].Err != "" {
		t.Fatalf("control: the attacker as the server's own uid could not terminate %s: %+v", control, own)
	}
	for _, r := range own {
		if r.What == uiRead && r.Err != "" {
			t.Errorf("control: the server's own uid could not read the workflows through the UI: %s", r.Err)
		}
	}
	if running(control) {
		t.Errorf("control: %s still runs after its owner terminated it", control)
	}
}
