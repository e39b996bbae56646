package e2e

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/testkit/e2e"
	"ctxlab/testkit/fakeopenai"
)

// paidCalls reads a run's ledger: the paid calls' keys (counted) and the cached calls.
func paidCalls(t *testing.T, dir string) (paid map[string]int, n, cached int) {
	t.Helper()
	calls, bad, err := runlog.Read[runlog.Call](filepath.Join(dir, runfolder.CallsFile))
	if err != nil || bad > 0 {
		t.Fatalf("calls.jsonl: %v, %d bad lines", err, bad)
	}
	paid = map[string]int{}
	for _, c := range calls {
		if c.Cached {
			cached++
			continue
		}
		paid[c.Key]++
		n++
	}
	return paid, n, cached
}

// TestSpendCapCacheAndNewAblation runs CQ2-CARE against the fake OpenAI server as a researcher would:
//  1. with a spend cap that the first calls exhaust: the starter stops with exit code 3 and says how to go on;
//  2. with the cap raised: the same sweep continues and finishes, and no request was paid twice;
//  3. with one ablation added: only that ablation's new calls are paid (its patch, once per issue);
//  4. under another name sharing the response cache folder: nothing is paid, and the rows are the same.
func TestSpendCapCacheAndNewAblation(t *testing.T) {
	t.Parallel()
	const key = "sk-ctxlab-cache-DO-NOT-LEAK-41d2"
	// Every answer is 4,000 tokens ($0.04): one call's worst case (4,096 tokens and its prompt) fits under a $0.06
	// cap, two do not, and after one is paid no other fits.
	srv := fakeopenai.New(fakeopenai.WithKey(key), fakeopenai.WithUsage(100, 4000))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	setStarterEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY="+key)
	runs, cache := t.TempDir(), t.TempDir()
	spec := func(name, methods string, spend float64) string {
		return demoVariant(t, "{ name: '"+name+"', dataset+: { limit: 2 }, methods: "+methods+", "+
			"models: [super.models[0] + { price: { input: 2.5, output: 10 } }], limits+: { spend_usd: "+
			strconv.FormatFloat(spend, 'f', -1, 64)+" } }")
	}
	run := func(specPath string, extra ...string) (string, string, int) {
		args := append([]string{"run", specPath, "--runs", runs, "--ext-str", "model=openai", "--cache", cache}, extra...)
		return runStarter(t, 10*time.Minute, args...)
	}
	dir := filepath.Join(runs, "capped")

	// 1. A cap of six cents: the first call reserves its worst case, the others wait for it to settle, then none
	// fits and the sweep waits.
	_, stderr, code := run(spec("capped", "[super.methods[2]]", 0.06))
	if code != exitPaused || !strings.Contains(stderr, "spend cap reached") || !strings.Contains(stderr, "run again") {
		t.Fatalf("exit %d, want %d with a message about the cap\nstderr:\n%s", code, exitPaused, stderr)
	}
	callsCapped := srv.Calls()
	if callsCapped != 1 {
		ledger, _ := os.ReadFile(filepath.Join(dir, runfolder.CallsFile))
		t.Fatalf("%d calls before the cap stopped the sweep (a full run makes 10)\ncalls.jsonl:\n%s\nstderr:\n%s",
			callsCapped, ledger, stderr)
	}

	// 2. Raised: it continues, and every request was paid once.
	stdout, stderr, code := run(spec("capped", "[super.methods[2]]", 100))
	if code != 0 {
		t.Fatalf("after raising the cap: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	if len(rows) != 2 {
		t.Fatalf("%d rows, want cq2care on 2 instances", len(rows))
	}
	for k, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("%v: %v", k, r[results.FieldError])
		}
	}
	paid, n, _ := paidCalls(t, dir)
	for k, c := range paid {
		if c > 1 {
			t.Errorf("request %s paid %d times", k[:12], c)
		}
	}
	if n != srv.Calls() || n != 2*5 {
		t.Errorf("ledger has %d paid calls, the server saw %d; want 10 (5 per issue)", n, srv.Calls())
	}

	// 3. One ablation added: only its patch calls are new.
	before := srv.Calls()
	if _, stderr, code := run(spec("capped", "super.methods[2:4]", 100)); code != 0 {
		t.Fatalf("with the ablation: exit %d\n%s", code, stderr)
	}
	if got := srv.Calls() - before; got != 2 || srv.CallsFor("patch") != 2*2 {
		t.Errorf("adding cq2care_no_evidence paid %d new calls (patch calls in all: %d); want its 2 patches",
			got, srv.CallsFor("patch"))
	}
	rows = readRows(t, filepath.Join(dir, "results.jsonl"))
	if len(rows) != 4 {
		t.Errorf("%d rows after adding the ablation, want 4", len(rows))
	}

	// 4. Another experiment sharing the cache folder asks the same questions: it pays for nothing.
	before = srv.Calls()
	if _, stderr, code := run(spec("again", "super.methods[2:4]", 100)); code != 0 {
		t.Fatalf("second experiment: exit %d\n%s", code, stderr)
	}
	if got := srv.Calls() - before; got != 0 {
		t.Errorf("an experiment sharing the cache paid %d calls", got)
	}
	again := readRows(t, filepath.Join(runs, "again", "results.jsonl"))
	_, n, cached := paidCalls(t, filepath.Join(runs, "again"))
	if n != 0 || cached != 2*6 {
		t.Errorf("second experiment's ledger: %d paid, %d cached; want 0 and 12", n, cached)
	}
	inCache, _ := grepTree(t, cache, key)
	inRuns, _ := grepTree(t, runs, key)
	if inCache+inRuns > 0 {
		t.Errorf("the API key is in %d files of the cache or run folders", inCache+inRuns)
	}
	for k, r := range rows {
		if !reflect.DeepEqual(r, again[k]) {
			t.Errorf("%v differs when answered from the cache:\n%v\n%v", k, r, again[k])
		}
	}
}

// grepTree counts the files under root that contain s (each is logged), and the files it read.
func grepTree(t *testing.T, root, s string) (found, read int) {
	t.Helper()
	e2e.EachFile(t, root, func(path string, b []byte) {
		read++
		if bytes.Contains(b, []byte(s)) {
			t.Logf("%s contains it", path)
			found++
		}
	})
	return found, read
}
