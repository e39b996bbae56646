package e2e

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/testkit/fakeopenai"
)

// TestSamplesPayOnce runs oracle_files with samples: 3 against the fake OpenAI server on two issues: each sample is
// its own paid call and its own row (sample 0..2); a second run of the finished sweep makes no call; raising samples
// to 4 pays only for the new sample of each issue.
func TestSamplesPayOnce(t *testing.T) {
	t.Parallel()
	const key = "sk-ctxlab-samples-DO-NOT-LEAK-7e1a"
	srv := fakeopenai.New(fakeopenai.WithKey(key))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	setStarterEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY="+key)
	runs := t.TempDir()
	spec := func(k int) string {
		return demoVariant(t, "{ name: 'sampled', anchor: '', dataset+: { limit: 2 }, methods: [super.methods[1] { samples: "+
			strconv.Itoa(k)+" }], models: [super.models[0] + { price: { input: 2.5, output: 10 } }] }")
	}
	dir := filepath.Join(runs, "sampled")
	run := func(k int) {
		t.Helper()
		stdout, stderr, code := runStarter(t, 10*time.Minute, "run", spec(k), "--runs", runs, "--ext-str", "model=openai")
		if code != 0 {
			t.Fatalf("samples %d: exit %d\nstdout:\n%s\nstderr:\n%s", k, code, stdout, stderr)
		}
	}
	check := func(k int) {
		t.Helper()
		rows := readRows(t, filepath.Join(dir, "results.jsonl"))
		if len(rows) != 2*k {
			t.Fatalf("%d rows, want %d (2 issues x %d samples)", len(rows), 2*k, k)
		}
		for id, r := range rows {
			if r[results.FieldError] != nil || r[results.FieldSample] != float64(id.Sample) || id.Sample >= k {
				t.Errorf("row %+v: sample %v, error %v", id, r[results.FieldSample], r[results.FieldError])
			}
		}
		paid, n, _ := paidCalls(t, dir)
		if len(paid) != n || n != srv.Calls() || n != 2*k {
			t.Errorf("%d paid calls (%d distinct), the server saw %d; want %d, each once", n, len(paid), srv.Calls(), 2*k)
		}
	}
	run(3)
	check(3)
	run(3)
	if srv.Calls() != 6 {
		t.Errorf("a second run of the finished sweep made %d calls", srv.Calls()-6)
	}
	run(4)
	check(4)
	summary, err := os.ReadFile(filepath.Join(dir, runfolder.SummaryFile))
	if err != nil || !strings.Contains(string(summary), "oracle_files (4)") {
		t.Errorf("summary.md (%v) does not name the method of samples:\n%s", err, summary)
	}
}
