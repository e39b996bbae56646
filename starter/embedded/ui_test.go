package embedded

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

func TestStartUIRefusesBusyPort(t *testing.T) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = StartUI(context.Background(), "127.0.0.1:7233", "default", port)
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("StartUI on a busy port: got %v, want an error saying the port is in use", err)
	}
}

// TestUIListsWorkflowsReadOnly serves the UI over a real embedded server holding one running workflow (no worker:
// it stays running), reads the workflow list through the UI's HTTP API, and checks that the UI cannot terminate it.
func TestUIListsWorkflowsReadOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv, err := Start(ctx, Options{DBFile: filepath.Join(dir, "temporal.db"), LogFile: filepath.Join(dir, "temporal.log"),
		Namespace: "ui-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: srv.Namespace(), Logger: quietSDKLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const id = "sweep/ui-test"
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "nobody-polls"}, "Sweep"); err != nil {
		t.Fatal(err)
	}

	ui, err := srv.StartUI(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()
	if !strings.HasPrefix(ui.URL(), "http://127.0.0.1:") || ui.WorkflowsURL() != ui.URL()+"/namespaces/ui-test/workflows" {
		t.Errorf("URLs: %s, %s", ui.URL(), ui.WorkflowsURL())
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}

	// The page itself: the UI's own assets, served from the binary.
	page := get(t, hc, ui.WorkflowsURL())
	if !strings.Contains(strings.ToLower(page), "<html") {
		t.Errorf("the workflows page is not HTML: %.200s", page)
	}
	// Visibility is eventually consistent: the list may lag the start by a moment.
	listURL := ui.URL() + "/api/v1/namespaces/ui-test/workflows"
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list struct {
			Executions []struct {
				Execution struct {
					WorkflowID string `json:"workflowId"`
				} `json:"execution"`
			} `json:"executions"`
		}
		body := get(t, hc, listURL)
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatalf("%s: %v\n%s", listURL, err, body)
		}
		if len(list.Executions) == 1 && list.Executions[0].Execution.WorkflowID == id {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not list %s:\n%s", listURL, id, body)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A write through the UI is refused, with a valid CSRF token so that the refusal is the read-only setting's.
	u, _ := url.Parse(ui.URL())
	token := ""
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "_csrf" {
			token = ck.Value
		}
	}
	if token == "" {
		t.Fatal("the UI set no _csrf cookie")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		ui.URL()+"/api/v1/namespaces/ui-test/workflows/"+url.PathEscape(id)+"/terminate", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("terminate through the UI: %s, want 403 Forbidden", resp.Status)
	}
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Errorf("workflow %s is %v after the UI's terminate, want running", id, st)
	}

	ui.Stop()
	if _, err := hc.Get(ui.URL() + "/healthz"); err == nil {
		t.Error("the UI still answers after Stop")
	}
}

func get(t *testing.T, hc *http.Client, u string) string {
	t.Helper()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%.500s", u, resp.Status, b)
	}
	return string(b)
}
