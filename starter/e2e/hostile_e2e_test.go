package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/demobench"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/testkit/e2e"
)

// datasetSpec writes rows as a JSONL dataset beside a generated demo benchmark (whose repositories and module proxy
// it uses) and returns a spec of the demo's reference methods over it, named name.
func datasetSpec(t *testing.T, bench *demobench.Result, file, name string, rows []swebench.Instance, extra string) string {
	t.Helper()
	writeDataset(t, filepath.Join(bench.DatasetDir, file), rows)
	return demoVariant(t, fmt.Sprintf("{ name: %q, dataset: { file: %q, repos: '{dataset_dir}/repos/{repo}' }, %s%s }",
		name, filepath.Join(bench.DatasetDir, file), referenceMethods, extra))
}

func writeDataset(t *testing.T, path string, rows []swebench.Instance) {
	t.Helper()
	var b bytes.Buffer
	if err := swebench.Write(&b, rows); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEditedDatasetRunsNodesAgain edits a dataset row (its problem statement and its FAIL_TO_PASS list) and runs the
// spec again in the same run folder: the rows must be those of a fresh run of the edited dataset, not the memoized
// outputs of the first (which kept the old prompt and the old resolved).
func TestEditedDatasetRunsNodesAgain(t *testing.T) {
	t.Parallel()
	bench, err := demobench.Generate(filepath.Join(t.TempDir(), "bench"))
	if err != nil {
		t.Fatal(err)
	}
	rows := e2e.FewDemoInstances(t, bench)
	edited := append([]swebench.Instance{}, rows...)
	edited[0].ProblemStatement += "\n\nSteps to reproduce: " + strings.Repeat("call it twice and compare. ", 40)
	edited[0].FailToPass = append(append(swebench.TestList{}, edited[0].FailToPass...), "TestNotInTheTestPatch")

	spec := datasetSpec(t, bench, "edit.jsonl", "edit", rows, "")
	fresh := datasetSpec(t, bench, "fresh.jsonl", "edit", edited, "")
	runs, freshRuns := t.TempDir(), t.TempDir()
	waitFresh := startStarter(t, 10*time.Minute, "run", fresh, "--runs", freshRuns, "--quiet")
	if _, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--quiet"); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	first := readRows(t, filepath.Join(runs, "edit", "results.jsonl"))
	writeDataset(t, filepath.Join(bench.DatasetDir, "edit.jsonl"), edited)
	if _, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--quiet"); code != 0 {
		t.Fatalf("run of the edited dataset: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := waitFresh(); code != 0 {
		t.Fatalf("fresh run of the edited dataset: exit %d\n%s", code, stderr)
	}
	got := readRows(t, filepath.Join(runs, "edit", "results.jsonl"))
	want := readRows(t, filepath.Join(freshRuns, "edit", "results.jsonl"))
	if len(want) != 4 {
		t.Fatalf("the fresh run has %d rows, want 2 instances x 2 methods", len(want))
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("row %v after the edit:\n got %v\nwant %v (a fresh run's)", k, got[k], w)
		}
	}
	// The edit shows: a longer prompt for the issue text alone, and a gold-file context that no longer resolves.
	id := edited[0].InstanceID
	ns := results.Key{Instance: id, Method: "no_source", Model: "offline"}
	of := results.Key{Instance: id, Method: "oracle_files", Model: "offline"}
	before, _ := first[ns].Float("prompt_tokens")
	after, _ := want[ns].Float("prompt_tokens")
	if before >= after {
		t.Errorf("the edited issue text did not lengthen the prompt: %v tokens, then %v", before, after)
	}
	if first[of]["resolved"] != true || want[of]["resolved"] != false {
		t.Errorf("oracle_files resolved %v before the edit and %v after, want true then false", first[of]["resolved"],
			want[of]["resolved"])
	}
}

// TestOtherSpecRefusedWhileSweepRuns: a second starter with another spec of the same name attached to the first's
// sweep and exited 0 with the first's summary, none of its own methods run. It must refuse (exit 2) naming both
// spec hashes, and leave the running sweep's run folder as it was (its limits, its recorded spec).
func TestOtherSpecRefusedWhileSweepRuns(t *testing.T) {
	t.Parallel()
	base := "{ name: 'clash', dataset+: { limit: 2 }, " + referenceMethods + ", debug: { slow_activities: '300ms' } }"
	spec := demoVariant(t, base)
	other := demoVariant(t, base+" + { methods: [super.methods[0]], limits+: { spend_usd: 7 } }")
	runs := t.TempDir()
	dir := filepath.Join(runs, "clash")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var out1, err1 bytes.Buffer
	_, exited := startWorking(ctx, t, spec, runs, "clash", &out1, &err1)
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return string(b)
	}
	// The starter records its spec after it submits the sweep, so the first attempt can come before it.
	waitWhileRunning(ctx, t, exited, "it recorded its spec", func() bool { return read(runfolder.SpecFile) != "" })
	specRecorded := read(runfolder.SpecFile)

	out2, err2, code := runStarter(t, 5*time.Minute, "run", other, "--runs", runs)
	if code != exitUsage {
		t.Errorf("second starter of another spec: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, out2, err2)
	}
	m := regexp.MustCompile(`sweep/clash is running from another spec \(spec hash ([0-9a-f]{12}); this spec's is ([0-9a-f]{12})\)`).
		FindStringSubmatch(err2)
	if m == nil || m[1] == m[2] {
		t.Errorf("the refusal does not name the two spec hashes:\n%s", err2)
	}
	if strings.Contains(out2, "results:") {
		t.Errorf("the refused starter printed a summary:\n%s", out2)
	}
	if s := read(runfolder.SpecFile); s != specRecorded {
		t.Errorf("the refused starter rewrote the running sweep's spec record:\n%s", s)
	}
	if b := budgetOf(ctx, t, dir, "clash"); b.Limits.SpendUSD != 0 {
		t.Errorf("the refused starter set its spend cap on the running sweep's budget: %+v", b.Limits)
	}
	if err := <-exited; err != nil {
		t.Fatalf("first starter: %v\n%s", err, err1.String())
	}
	if rows := readRows(t, filepath.Join(dir, "results.jsonl")); len(rows) != 4 {
		t.Errorf("the first sweep wrote %d rows, want its 2 instances x 2 methods: %v", len(rows), keys(rows))
	}
}

// TestResultsFolderStopsSweep: results.jsonl replaced by a folder made the record step fail and retry forever. A
// starter must refuse such a run folder before it starts, and a sweep whose results.jsonl becomes a folder while
// it runs must stop with a non-zero exit; both name the path.
func TestResultsFolderStopsSweep(t *testing.T) {
	t.Parallel()
	t.Run("before", func(t *testing.T) {
		t.Parallel()
		runs := t.TempDir()
		path := filepath.Join(runs, "rfstart", "results.jsonl")
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		spec := demoVariant(t, "{ name: 'rfstart', dataset+: { limit: 1 }, "+referenceMethods+" }")
		_, stderr, code := runStarter(t, 3*time.Minute, "run", spec, "--runs", runs)
		if code != exitFail || !strings.Contains(stderr, path+" is a folder") {
			t.Errorf("exit %d, want %d naming %s as a folder:\n%s", code, exitFail, path, stderr)
		}
	})
	t.Run("while running", func(t *testing.T) {
		t.Parallel()
		runs := t.TempDir()
		path := filepath.Join(runs, "rfmid", "results.jsonl")
		spec := demoVariant(t, "{ name: 'rfmid', dataset+: { limit: 1 }, "+referenceMethods+
			", debug: { slow_activities: '1s' } }")
		wait := startStarter(t, 5*time.Minute, "run", spec, "--runs", runs)
		deadline := time.Now().Add(3 * time.Minute)
		for {
			if b, err := os.ReadFile(filepath.Join(runs, "rfmid", "attempts.jsonl")); err == nil && len(b) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the sweep did not start")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatalf("too late: the sweep recorded its rows already (%v)", err)
		}
		_, stderr, code := wait()
		if code == exitOK || !strings.Contains(stderr, path+" is a folder") {
			t.Errorf("exit %d, want a failure naming %s as a folder:\n%s", code, path, stderr)
		}
	})
}

// TestHostileInstanceIDs runs a dataset whose ids are unicode, hold a newline or NUL, are 10 KB long, or clean to
// the same file name ("a/b", "a_b") or climb out of a folder (".."): the sweep hung at its first such id (Temporal
// refuses such workflow ids). Every row must come back with its original id, once, graded as the same instance
// under a plain id is, and the node memos of the ids must keep apart inside the run folder.
func TestHostileInstanceIDs(t *testing.T) {
	t.Parallel()
	bench, err := demobench.Generate(filepath.Join(t.TempDir(), "bench"))
	if err != nil {
		t.Fatal(err)
	}
	base := e2e.FewDemoInstances(t, bench)[0]
	ids := []string{"ünïcødé__repo-1 ✓", "new\nline", "nul\x00byte", strings.Repeat("long-", 2048), "a/b", "a_b", ".."}
	rows := make([]swebench.Instance, len(ids))
	for i, id := range ids {
		rows[i] = base
		rows[i].InstanceID = id
	}
	spec := datasetSpec(t, bench, "ids.jsonl", "ids", rows, "")
	runs := t.TempDir()
	if _, stderr, code := runStarter(t, 6*time.Minute, "run", spec, "--runs", runs, "--quiet"); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	dir := filepath.Join(runs, "ids")
	got := readRows(t, filepath.Join(dir, "results.jsonl")) // fails on a row written twice
	if len(got) != 2*len(ids) {
		t.Errorf("%d rows, want %d ids x 2 methods: %q", len(got), len(ids), keys(got))
	}
	for _, id := range ids {
		of := got[results.Key{Instance: id, Method: "oracle_files", Model: "offline"}]
		ns := got[results.Key{Instance: id, Method: "no_source", Model: "offline"}]
		if of["resolved"] != true || ns == nil || ns["resolved"] != false {
			t.Errorf("id %.40q: oracle_files %v, no_source %v; want resolved and not", id, of, ns)
		}
	}
	folders, err := os.ReadDir(filepath.Join(dir, "nodes"))
	if err != nil || len(folders) != len(ids) {
		t.Errorf("nodes/ holds %d folders (%v), want one per id", len(folders), err)
	}
	if stray, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(stray) > 0 {
		for _, p := range stray {
			if b := filepath.Base(p); b != runfolder.SpecFile && b != "server.json" {
				t.Errorf("a node memo escaped its folder: %s", p)
			}
		}
	}
	out, _ := mainOut(t, "status", "ids", "--runs", runs)
	if !strings.Contains(out, fmt.Sprintf("%d done, 0 failed, 0 running, 0 pending", len(ids))) {
		t.Errorf("status:\n%s", out)
	}
}

// TestDamagedDatabaseStartsOver cuts a finished run's temporal.db short: the starter said "malformed" and nothing
// more. It must name the file and say what to do, and --fresh-db must run the sweep again on a new database,
// keeping the damaged one, every node taken from its memo and the rows as they were.
func TestDamagedDatabaseStartsOver(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	dir := filepath.Join(runs, "dmg")
	spec := demoVariant(t, "{ name: 'dmg', dataset+: { limit: 1 }, "+referenceMethods+" }")
	if _, stderr, code := runStarter(t, 5*time.Minute, "run", spec, "--runs", runs, "--quiet"); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	want := readRows(t, filepath.Join(dir, "results.jsonl"))
	starts := countEvents(t, dir, "start")
	db := filepath.Join(dir, "temporal.db")
	for _, p := range []string{db + "-wal", db + "-shm"} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(db, st.Size()/2); err != nil {
		t.Fatal(err)
	}

	_, stderr, code := runStarter(t, 5*time.Minute, "run", spec, "--runs", runs, "--quiet")
	if code != exitFail || !strings.Contains(stderr, db+" is damaged") || !strings.Contains(stderr, "--fresh-db") {
		t.Fatalf("run on the damaged database: exit %d, want %d naming %s and --fresh-db:\n%s", code, exitFail, db,
			stderr)
	}
	t.Logf("run on the damaged database:\n%s", stderr)
	if _, stderr, code := runStarter(t, 5*time.Minute, "run", spec, "--runs", runs, "--quiet", "--fresh-db"); code != 0 {
		t.Fatalf("--fresh-db: exit %d\n%s", code, stderr)
	}
	if got := readRows(t, filepath.Join(dir, "results.jsonl")); !reflect.DeepEqual(got, want) {
		t.Errorf("rows after starting over:\n%v\nwant\n%v", got, want)
	}
	if n := countEvents(t, dir, "start"); n != starts {
		t.Errorf("starting over ran %d nodes again; every one had its memo", n-starts)
	}
	if kept, _ := filepath.Glob(db + ".damaged-*"); len(kept) != 1 {
		t.Errorf("the damaged database was not kept beside the new one: %v", kept)
	}
}

// countEvents counts the attempt log's events of a kind.
func countEvents(t *testing.T, runDir, event string) int {
	t.Helper()
	n := 0
	for _, e := range readAttempts(t, filepath.Join(runDir, "attempts.jsonl")) {
		if e.Event == event {
			n++
		}
	}
	return n
}
