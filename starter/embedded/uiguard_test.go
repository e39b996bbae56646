package embedded

import (
	"context"
	"io"
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

// TestUIGuardRefusesWrites serves the UI over a real embedded server holding two running Issue workflows (no
// worker: they stay running) and sends it writes disguised as reads: ids and names with encoded or double-encoded
// slashes that make the decoded path look like a query, dot segments, and the plain writes. Every one must be refused
// with 403 and leave no trace on the server, while the reads the UI's pages make still answer.
func TestUIGuardRefusesWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const ns = "guard-test"
	srv, err := Start(ctx, Options{DBFile: filepath.Join(dir, "temporal.db"), LogFile: filepath.Join(dir, "temporal.log"),
		Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: srv.Namespace(), Logger: quietSDKLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ids := []string{"issue/" + ns + "/a", "issue/" + ns + "/b"}
	for _, id := range ids {
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "nobody-polls"}, "Issue"); err != nil {
			t.Fatal(err)
		}
	}
	ui, err := srv.StartUI(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	api := ui.URL() + "/api/v1/namespaces/" + ns

	// The reads of the pages a researcher uses: the list, a workflow's page, its history both ways, the raw history.
	get(t, hc, ui.WorkflowsURL())
	escA := url.PathEscape(ids[0]) // the UI encodes ids once: issue%2Fguard-test%2Fa
	waitListed(t, hc, api+"/workflows?query="+url.QueryEscape("WorkflowType='Issue'"), ids)
	for _, p := range []string{"", "/history", "/history-reverse"} {
		if body := get(t, hc, api+"/workflows/"+escA+p); !strings.Contains(body, ids[0]) && p == "" {
			t.Errorf("describe %s through the UI does not name it:\n%.300s", ids[0], body)
		}
	}
	token := csrfToken(t, jar, ui.URL())

	batch := `{"jobId":"JOB","namespace":"` + ns + `","visibilityQuery":"WorkflowType='Issue'",` +
		`"reason":"ui","terminationOperation":{}}`
	schedule := `{"scheduleId":"/workflows/s/query/","requestId":"r1","schedule":{"spec":{"interval":[{"interval":"3600s"}]},` +
		`"action":{"startWorkflow":{"workflowId":"x","workflowType":{"name":"Issue"},"taskQueue":{"name":"q"}}}}}`
	attacks := []struct{ name, method, path, body string }{
		{"signal named x/query/y", "POST", "/workflows/" + escA + "/signal/x%2Fquery%2Fy", `{}`},
		{"signal, lower-case escapes", "POST", "/workflows/" + escA + "/signal/x%2fquery%2fy", `{}`},
		{"signal, double-encoded", "POST", "/workflows/" + escA + "/signal/x%252Fquery%252Fy", `{}`},
		{"batch terminate of every Issue", "POST", "/batch-operations/%2Fworkflows%2Fquery%2F",
			strings.ReplaceAll(batch, "JOB", "/workflows/query/")},
		{"batch terminate, double-encoded", "POST", "/batch-operations/x%252Fworkflows%252Fquery%252F",
			strings.ReplaceAll(batch, "JOB", "x%2Fworkflows%2Fquery%2F")},
		{"schedule create", "POST", "/schedules/%2Fworkflows%2Fs%2Fquery%2F", schedule},
		{"terminate", "POST", "/workflows/" + escA + "/terminate", `{"reason":"ui"}`},
		{"terminate via dot segments", "POST", "/workflows/x/query/../../" + escA + "/terminate", `{}`},
		{"terminate via encoded dot segments", "POST", "/workflows/x/query/%2e%2e/%2E%2E/" + escA + "/terminate", `{}`},
		{"cancel", "POST", "/workflows/" + escA + "/cancel", `{}`},
		{"reset", "POST", "/workflows/" + escA + "/reset", `{"reason":"ui","workflowTaskFinishEventId":"2"}`},
		{"namespace update", "POST", "/update", `{"updateInfo":{"description":"owned"}}`},
		{"query of an id holding /query/, then a signal", "POST",
			"/workflows/" + escA + "%2Fquery%2Fq/signal/s", `{}`},
		{"delete a schedule", "DELETE", "/schedules/s", ``},
		{"terminate by PUT", "PUT", "/workflows/" + escA + "/terminate", `{}`},
	}
	for _, a := range attacks {
		status, body := send(ctx, t, hc, a.method, api+a.path, a.body, token)
		if status != http.StatusForbidden {
			t.Errorf("%s (%s %s): %d %.200s, want 403", a.name, a.method, a.path, status, body)
		}
	}

	// The UI's one POST for reading, a query, still reaches the server (the workflow does not exist: 404 from
	// Temporal, not 403 from the guard), and the UI's CSRF check still guards it.
	queryPath := api + "/workflows/" + url.PathEscape("issue/"+ns+"/none") + "/query/__stack_trace"
	if status, body := send(ctx, t, hc, "POST", queryPath, `{}`, token); status != http.StatusNotFound {
		t.Errorf("query of a missing workflow through the UI: %d %.200s, want 404 from the server", status, body)
	}
	if status, body := send(ctx, t, hc, "POST", queryPath, `{}`, ""); status == http.StatusNotFound ||
		status < 400 || strings.Contains(body, guardRefusal) {
		t.Errorf("query without a CSRF token: %d %.200s, want the UI's CSRF refusal", status, body)
	}

	// Nothing happened on the server: both workflows run with no signal, no batch job, no schedule.
	time.Sleep(2 * time.Second) // a batch job accepted would have begun terminating by now
	for _, id := range ids {
		desc, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Errorf("workflow %s is %v after the attacks, want running", id, st)
		}
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED {
				t.Errorf("workflow %s was signalled through the UI: %v", id, ev.GetWorkflowExecutionSignaledEventAttributes())
			}
		}
	}
	sched, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sched.HasNext() {
		s, _ := sched.Next()
		t.Errorf("a schedule was created through the UI: %v", s)
	}
	batches := get(t, hc, api+"/batch-operations")
	if strings.Contains(batches, "jobId") {
		t.Errorf("a batch operation was started through the UI:\n%.500s", batches)
	}
}

// TestUIGuardRules checks the guard's decisions on paths alone, including the ones a client library would
// normalise before sending.
func TestUIGuardRules(t *testing.T) {
	allowed := []struct{ method, uri string }{
		{"GET", "/"},
		{"GET", "/namespaces/default/workflows"},
		{"GET", "/namespaces/default/workflows/issue%2Fdemo%2Facme__x-1/0193-run/history"},
		{"GET", "/_app/immutable/chunks/x.js"},
		{"GET", "/api/v1/settings"},
		{"GET", "/api/v1/namespaces/default/workflows?query=WorkflowType%3D%27Issue%27"},
		{"POST", "/api/v1/namespaces/default/workflows/a/query/q?x=1/../../terminate"}, // a query string routes nothing
		{"GET", "/api/v1/namespaces/default/workflows/sweep%2Fdemo"},
		{"GET", "/api/v1/namespaces/default/workflows/issue%2Fdemo%2Fa/history?next_page_token=x%2Fy"},
		{"GET", "/api/v1/namespaces/default/workflows/issue%2Fdemo%2Fa/run/r1/history.json"},
		{"HEAD", "/api/v1/namespaces/default/workflows"},
		{"POST", "/api/v1/namespaces/default/workflows/issue%2Fdemo%2Fa/query/__stack_trace"},
	}
	for _, a := range allowed {
		if why := refuseUIRequest(a.method, a.uri); why != "" {
			t.Errorf("%s %s refused (%s), want allowed", a.method, a.uri, why)
		}
	}
	refused := []struct{ method, uri string }{
		{"POST", "/api/v1/namespaces/default/workflows/a/signal/x%2Fquery%2Fy"},
		{"POST", "/api/v1/namespaces/default/workflows/a/query/q/extra"},
		{"POST", "/api/v1/namespaces/default/workflows/a/query/q%2F..%2Fsignal"},
		{"POST", "/api/v1/namespaces/default/workflows/a%252F/query/q"},
		{"POST", "/api/v1/namespaces/def%2Fault/workflows/a/query/q"},
		{"POST", "/api/v1/namespaces/default/workflows//query/q"},
		{"POST", "/api/v1/namespaces/default/workflows/%2e%2e/query/q"},
		{"POST", "/api/v1/namespaces/default/workflows/./query/q"},
		{"POST", "/api/v1/namespaces/default/%77orkflows/a/query/q"},
		{"POST", "/api/v1/namespaces/default/workflows/a/%71uery/q"},
		{"POST", "/api/%76%31/namespaces/default/workflows/a/query/q"},
		{"POST", "/api/v1/namespaces/default/batch-operations/%2Fworkflows%2Fquery%2F"},
		{"POST", "http://127.0.0.1/api/v1/namespaces/default/workflows/a/query/q"},
		{"PUT", "/api/v1/namespaces/default/workflows/a/query/q"},
		{"OPTIONS", "/api/v1/namespaces/default/workflows/a/query/q"},
		{"GET", "/api/v1/namespaces/default/workflows/a/../../other"},
		{"GET", "/api/v1/namespaces/default/batch-operations/%2Fworkflows%2F"},
		{"GET", "/api/v1/namespaces/default/workflows/a%252Fb"},
		{"GET", "/api/v1/namespaces/default/workflows/a%5C..%5Cb"},
		{"GET", "/namespaces/default/%2e%2e/api/v1/settings"},
		{"GET", "/%2F%2Fevil.example"},
	}
	for _, r := range refused {
		if why := refuseUIRequest(r.method, r.uri); why == "" {
			t.Errorf("%s %s allowed, want refused", r.method, r.uri)
		}
	}
}

func waitListed(t *testing.T, hc *http.Client, listURL string, ids []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		body := get(t, hc, listURL)
		all := true
		for _, id := range ids {
			all = all && strings.Contains(body, `"`+id+`"`)
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not list %v:\n%.500s", listURL, ids, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func csrfToken(t *testing.T, jar http.CookieJar, base string) string {
	t.Helper()
	u, _ := url.Parse(base)
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "_csrf" {
			return ck.Value
		}
	}
	t.Fatal("the UI set no _csrf cookie")
	return ""
}

// send makes a request with the path exactly as given (no client-side cleaning) and returns status and body.
func send(ctx context.Context, t *testing.T, hc *http.Client, method, rawURL, body, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, rawURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("X-CSRF-Token", token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
