package e2e

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"ctxlab/testkit/fakeopenai"
)

// TestRunExitsNonZeroWhenRowsFail runs a sweep whose every model call is refused (a wrong API key: every row fails
// with an auth error). The starter used to exit 0 with "ok": true; it must exit exitRowErrors, say how many rows
// failed and of which kind, and report ok false. --allow-errors gives scripts their 0 back, still saying it.
func TestRunExitsNonZeroWhenRowsFail(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(fakeopenai.WithKey("sk-the-right-key"))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	setStarterEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY=sk-a-wrong-key")

	spec := demoVariant(t, "{ name: 'autherr', dataset+: { limit: 2 }, anchor:: null, methods: super.methods[0:1] }")
	runs := t.TempDir()
	// The check before the sweep would stop it at the refused key (TestCheckEndpoint); these runs skip it, as for a
	// key revoked in the middle of a sweep.
	stdout, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--ext-str", "model=openai",
		"--json", "--no-check")
	if code != exitRowErrors {
		t.Fatalf("exit %d with every row failed, want %d\nstdout:\n%s\nstderr:\n%s", code, exitRowErrors, stdout,
			stderr)
	}
	if srv.Calls() == 0 {
		t.Fatal("no model call reached the endpoint: the rows failed for another reason than the one tested")
	}
	var sum runSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if sum.OK || sum.Rows != 2 || sum.RowErrors != 2 || sum.ErrorKinds["auth"] != 2 || len(sum.ErrorKinds) != 1 {
		t.Errorf("summary ok=%v rows=%d row_errors=%d error_kinds=%v, want ok false and 2 auth errors of 2 rows",
			sum.OK, sum.Rows, sum.RowErrors, sum.ErrorKinds)
	}
	if !strings.Contains(stderr, "2 of 2 rows have errors (auth 2)") {
		t.Errorf("stderr does not give the count and kinds of the errors:\n%s", stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("--json stderr line is not JSON: %s", line)
		}
	}

	// The finished sweep again, for a script that wants 0: exit 0, the errors still reported. An auth failure is
	// the configuration's, not the model's, so the re-run retries those rows (the key may have been fixed; here it
	// was not, and they fail again).
	calls := srv.Calls()
	stdout, stderr, code = runStarter(t, 5*time.Minute, "run", spec, "--runs", runs, "--ext-str", "model=openai",
		"--allow-errors", "--no-check")
	if code != exitOK {
		t.Fatalf("--allow-errors: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "2 of 2 rows have errors (auth 2)") {
		t.Errorf("--allow-errors hides the errors:\n%s", stderr)
	}
	if srv.Calls() != calls+2 {
		t.Errorf("re-running the finished sweep made %d model calls, want the 2 auth rows' again", srv.Calls()-calls)
	}
}
