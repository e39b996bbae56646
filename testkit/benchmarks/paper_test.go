package benchmarks

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/activities"
	"ctxlab/activities/api"
	"ctxlab/activities/bm25"
	"ctxlab/activities/chunk"
	"ctxlab/activities/rankings"
	"ctxlab/activities/tokens"
	"ctxlab/dataset/swebench"
	"ctxlab/jsonnet"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/testkit/synthrepo"
)

var (
	paperIssues = flag.Int("paper.issues", 0, "issues, each over its own generated repository, in "+
		"BenchmarkPaperSweepMemory's sweep (0: the benchmark is skipped; 16 fills the paper's concurrency)")
	paperStarter = flag.String("paper.starter", "", "BenchmarkPaperSweepMemory runs this starter binary (one "+
		"built at another commit, to compare) instead of building this checkout's")
)

// The paper-scale benchmarks run specs/paper.jsonnet's methods that need no external service (no embeddings
// endpoint, no compression server: 25 of its 37) under two offline models on issues over generated repositories of
// SWE-bench's average size. The generated repositories have no tests, so the grade steps are left out: a grade's
// cost is the instance's own tests (docs/benchmarks.md, Grading).

// retrievalUnits are the units the paper's BM25 retrievers cut a snapshot into.
var retrievalUnits = specs.RetrieveUnit("").Values()

// paperInstance writes the generated repository of seed as a git repository under reposDir and returns an issue
// over it: its gold patch edits one line of a Python function, and its text names the function and its class.
func paperInstance(tb testing.TB, reposDir string, seed uint64) swebench.Instance {
	tb.Helper()
	name := fmt.Sprintf("synth/repo%d", seed)
	dir := filepath.Join(reposDir, filepath.FromSlash(name))
	files := synthrepo.Generate(seed)
	if err := synthrepo.Write(dir, files); err != nil {
		tb.Fatal(err)
	}
	git := func(args ...string) string {
		tb.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=bench", "-c", "user.email=bench@example.org",
			"-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			tb.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := strings.TrimSpace(git("rev-parse", "HEAD"))

	// The gold file: the first Python file with a class and a method; the fix edits the method's return line.
	def := regexp.MustCompile(`(?m)^    def (\w+)\(self.*\n.*\n(?:.*\n){0,3}?        (return .*)$`)
	class := regexp.MustCompile(`(?m)^class (\w+):`)
	for _, f := range files {
		m, c := def.FindSubmatchIndex(f.Content), class.FindSubmatch(f.Content)
		if !strings.HasSuffix(f.Path, ".py") || m == nil || c == nil {
			continue
		}
		fn, ret := string(f.Content[m[2]:m[3]]), f.Content[m[4]:m[5]]
		fixed := slices.Concat(f.Content[:m[4]], []byte("return None if "+string(c[1])+" is None else "),
			ret[len("return "):], f.Content[m[5]:])
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.WriteFile(path, fixed, 0o644); err != nil {
			tb.Fatal(err)
		}
		patch := git("diff")
		git("checkout", "--", f.Path)
		return swebench.Instance{
			InstanceID: fmt.Sprintf("synth__repo%d-1", seed), Repo: name, BaseCommit: base,
			ProblemStatement: fmt.Sprintf("TimeoutError when the session cache reloads: %s.%s returns a stale value "+
				"instead of None when the %s is missing.\nSteps: call %s() after reloadConfig(); the request handler "+
				"raises TimeoutError.", c[1], fn, c[1], fn),
			Patch:      patch,
			TestPatch:  "diff --git a/tests/test_fix.py b/tests/test_fix.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_fix.py\n@@ -0,0 +1,2 @@\n+def test_fix():\n+    pass\n",
			FailToPass: swebench.TestList{"tests/test_fix.py::test_fix"},
		}
	}
	tb.Fatal("no Python file with a class and a method in the generated repository")
	return swebench.Instance{}
}

// paperDataset writes n issues, each over its own generated repository (seeds 1..n), as a dataset under dir.
func paperDataset(tb testing.TB, dir string, n int) specs.Dataset {
	tb.Helper()
	var rows bytes.Buffer
	for seed := range uint64(n) {
		b, err := json.Marshal(paperInstance(tb, filepath.Join(dir, "repos"), seed+1))
		if err != nil {
			tb.Fatal(err)
		}
		rows.Write(append(b, '\n'))
	}
	file := filepath.Join(dir, "paper.jsonl")
	if err := os.WriteFile(file, rows.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return specs.Dataset{File: file, Repos: "{dataset_dir}/repos/{repo}"}
}

// paperExperiment is specs/paper.jsonnet over the dataset, its methods that need no external service under two
// offline models, without grade steps.
func paperExperiment(tb testing.TB, ds specs.Dataset) *specs.Experiment {
	tb.Helper()
	e, err := jsonnet.Compile(filepath.Join("..", "..", "specs", "paper.jsonnet"), jsonnet.Options{
		ExtStr: map[string]string{"dataset": ds.File, "repos": ds.Repos}})
	if err != nil {
		tb.Fatal(err)
	}
	e.Models = []specs.Model{{Name: "offline-a", Provider: "offline"}, {Name: "offline-b", Provider: "offline"}}
	var kept []specs.Method
	for _, m := range e.Methods {
		if slices.ContainsFunc(m.Steps, needsService) {
			continue
		}
		m.Steps = slices.DeleteFunc(slices.Clone(m.Steps), func(s specs.Step) bool { return s.Activity == "grade" })
		kept = append(kept, m)
	}
	e.Methods = kept
	if errs := specs.Validate(e); len(errs) > 0 {
		tb.Fatalf("the paper's offline methods: %v", errs)
	}
	return e
}

// needsService reports a step that calls an embeddings endpoint or a compression server.
func needsService(s specs.Step) bool {
	switch s.Activity {
	case "retrieve":
		return s.Params["scorer"] == "dense"
	case "compress":
		return s.Params["compressor"] != "fake"
	}
	return false
}

// kindCost is what the steps of one kind cost over an issue.
type kindCost struct {
	nodes     int
	wall, cpu time.Duration
}

// runIssue runs every node of the plan on the instance, one after the other in plan order, in a fresh run folder
// and worker (empty caches), and returns each kind's cost (process CPU time while its nodes ran) and the run folder.
func runIssue(b *testing.B, e *specs.Experiment, plan *specs.Plan) (map[string]*kindCost, string) {
	ctx := context.Background()
	runs := b.TempDir()
	tokens.SetCacheSize(tokens.DefaultCacheEntries) // token counts afresh, as a new worker's
	a := activities.New(runs, zerolog.Nop())
	refs, err := a.LoadDataset(ctx, api.LoadDatasetInput{Run: e.Name, Dataset: e.Dataset})
	if err != nil || len(refs) != 1 {
		b.Fatalf("dataset: %v, %d instances", err, len(refs))
	}
	fns := a.Functions()
	outs := map[string]api.NodeOutput{}
	costs := map[string]*kindCost{}
	for _, n := range plan.Nodes {
		in := api.NodeInput{Run: e.Name, Instance: refs[0], Node: n.Key, Step: n.Steps[0], Params: n.Params,
			Inputs: map[string]api.NodeOutput{}, Dataset: e.Dataset}
		for name, k := range n.Inputs {
			in.Inputs[name] = outs[k]
		}
		start, cpu := time.Now(), cpuTime()
		out, err := fns[n.Activity].(func(context.Context, api.NodeInput) (api.NodeOutput, error))(ctx, in)
		wall, used := time.Since(start), cpuTime()-cpu
		if err != nil {
			b.Fatalf("%s: %v", n.Steps[0], err)
		}
		outs[n.Key] = out
		c := costs[n.Activity]
		if c == nil {
			c = &kindCost{}
			costs[n.Activity] = c
		}
		c.nodes++
		c.wall += wall
		c.cpu += used
	}
	return costs, filepath.Join(runs, e.Name)
}

// leastCPU is the least process CPU time of three runs of op.
func leastCPU(op func()) time.Duration {
	least := time.Duration(1 << 62)
	for range 3 {
		cpu := cpuTime()
		op()
		least = min(least, cpuTime()-cpu)
	}
	return least
}

// buildUnitIndex cuts every file into the unit, builds the BM25 index of the chunks' documents and ranks them for
// the query: one ranking, from text already in memory.
func buildUnitIndex(b *testing.B, r repoOnDisk, contents [][]byte, unit, query string) {
	u, err := rankings.ChunkUnit(specs.RetrieveUnit(unit))
	if err != nil {
		b.Fatal(err)
	}
	ix := bm25.New(bm25.Defaults())
	for i, c := range contents {
		for _, ch := range chunk.Split(r.paths[i], c, u, chunk.DefaultWindow) {
			ix.Add(rankings.Doc(specs.RetrieveUnit(unit), ch))
		}
	}
	if order := ix.Rank(query); len(order) < len(contents) {
		b.Fatal("fewer chunks than files")
	}
}

// BenchmarkPaperIssue runs one issue of the paper's offline methods under two models over the generated 3,010-file
// repository (the one the other benchmarks read) and reports the whole issue's CPU and wall time as multiples of
// one read of the repository (x_read_cpu, x_read), the retrieve steps' CPU as a multiple of building the five
// units' BM25 indexes once (retrieve_x_five_builds), and, from the same run, one function-unit index and query
// (chunking included) over one read (bm25_x_read_cpu). Each kind's steps are logged:
//
//	go test -run '^$' -bench PaperIssue -benchtime 1x ./testkit/benchmarks/
func BenchmarkPaperIssue(b *testing.B) {
	r := setup(b)
	e := paperExperiment(b, paperDataset(b, b.TempDir(), 1))
	plan, err := specs.BuildPlan(e)
	if err != nil {
		b.Fatal(err)
	}
	inst, err := swebench.ReadFile(e.Dataset.File)
	if err != nil {
		b.Fatal(err)
	}
	query := inst[0].ProblemStatement
	contents := readAll(b)
	five := leastCPU(func() {
		for _, u := range retrievalUnits {
			buildUnitIndex(b, r, contents, u, query)
		}
	})
	function := leastCPU(func() { buildUnitIndex(b, r, contents, "function", query) })

	var costs map[string]*kindCost
	var total kindCost
	b.ResetTimer()
	for b.Loop() {
		var runDir string
		costs, runDir = runIssue(b, e, plan)
		if n := countFiles(b, runfolder.Rankings(runDir), ".json"); n != len(retrievalUnits) {
			b.Errorf("%d rankings stored for the issue, want one per unit (%d)", n, len(retrievalUnits))
		}
	}
	b.StopTimer()
	kinds := make([]string, 0, len(costs))
	for k, c := range costs {
		kinds = append(kinds, k)
		total.nodes += c.nodes
		total.wall += c.wall
		total.cpu += c.cpu
	}
	sort.Slice(kinds, func(i, j int) bool { return costs[kinds[i]].cpu > costs[kinds[j]].cpu })
	var table strings.Builder
	fmt.Fprintf(&table, "%d methods x %d models, %d nodes; one read %v (CPU %v), five unit indexes %v CPU\n",
		len(e.Methods), len(e.Models), total.nodes, r.read.Round(time.Millisecond), r.readCPU.Round(time.Millisecond),
		five.Round(time.Millisecond))
	fmt.Fprintf(&table, "%-16s %5s %10s %10s %10s\n", "kind", "nodes", "cpu", "x_read_cpu", "wall")
	for _, k := range append(kinds, "issue") {
		c := total
		if k != "issue" {
			c = *costs[k]
		}
		fmt.Fprintf(&table, "%-16s %5d %10v %10.2f %10v\n", k, c.nodes, c.cpu.Round(time.Millisecond),
			float64(c.cpu)/float64(r.readCPU), c.wall.Round(time.Millisecond))
	}
	b.Log("\n" + table.String())
	b.ReportMetric(float64(total.wall)/float64(r.read), "x_read")
	b.ReportMetric(float64(total.cpu)/float64(r.readCPU), "x_read_cpu")
	b.ReportMetric(float64(costs["retrieve"].cpu)/float64(five), "retrieve_x_five_builds")
	b.ReportMetric(float64(five)/float64(r.readCPU), "five_builds_x_read_cpu")
	b.ReportMetric(float64(function)/float64(r.readCPU), "bm25_x_read_cpu")
}

// countFiles counts the files with the extension under dir.
func countFiles(b *testing.B, dir, ext string) int {
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(path) == ext {
			n++
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkPaperSweepMemory runs `starter run` (its embedded server and in-process workers, as a user runs a sweep)
// on -paper.issues issues, each over its own generated 3,010-file repository, with the paper's offline methods
// under two models at the paper's concurrency (16 issues in flight), and reports the starter process's peak
// resident memory (getrusage's maxrss), its CPU time and the rows. The environment is passed on, so
// CTXLAB_FILE_CACHE_MB sets the bound on cached snapshot text and chunks. It takes minutes, so it runs only when
// asked for:
//
//	go test -run '^$' -bench PaperSweepMemory -benchtime 1x -timeout 60m ./testkit/benchmarks/ -paper.issues 16
func BenchmarkPaperSweepMemory(b *testing.B) {
	if *paperIssues < 1 {
		b.Skip("-paper.issues N (16: the paper's concurrency) runs the sweep")
	}
	dir := b.TempDir()
	bin := *paperStarter
	if bin == "" {
		bin = filepath.Join(dir, "starter")
		if out, err := exec.Command("go", "build", "-o", bin, "ctxlab/starter").CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, out)
		}
	}
	e := paperExperiment(b, paperDataset(b, filepath.Join(dir, "dataset"), *paperIssues))
	if e.Limits.Concurrency != 16 {
		b.Fatalf("specs/paper.jsonnet's concurrency is %d; this benchmark measures the paper's 16", e.Limits.Concurrency)
	}
	spec, err := json.Marshal(e) // JSON is Jsonnet
	if err != nil {
		b.Fatal(err)
	}
	specFile := filepath.Join(dir, "paper-offline.jsonnet")
	if err := os.WriteFile(specFile, spec, 0o644); err != nil {
		b.Fatal(err)
	}
	var rss, cpu, wall float64
	for b.Loop() {
		runs := b.TempDir()
		cmd := exec.Command(bin, "run", specFile, "--runs", runs, "--quiet")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("starter run: %v\n%s", err, out.String())
		}
		wall = time.Since(start).Seconds()
		u := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		rss = float64(u.Maxrss) / 1024 // KiB on Linux
		cpu = time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds()
		rows, bad, err := results.ReadFile(runfolder.Rows(filepath.Join(runs, e.Name)))
		if want := *paperIssues * len(e.Methods) * len(e.Models); err != nil || len(bad) > 0 || len(rows) != want {
			b.Fatalf("%d rows (%v, %d torn), want %d", len(rows), err, len(bad), want)
		}
		ranked := 0
		if _, err := os.Stat(runfolder.Rankings(filepath.Join(runs, e.Name))); err == nil {
			ranked = countFiles(b, runfolder.Rankings(filepath.Join(runs, e.Name)), ".json")
		}
		b.Logf("%d issues x %d methods x %d models: %d rows, %d rankings stored, %.0f MiB peak RSS, %.0f s CPU, %.0f s "+
			"wall (CTXLAB_FILE_CACHE_MB=%q)", *paperIssues, len(e.Methods), len(e.Models), len(rows), ranked, rss, cpu,
			wall, os.Getenv("CTXLAB_FILE_CACHE_MB"))
	}
	b.ReportMetric(rss, "peak_rss_MiB")
	b.ReportMetric(cpu, "cpu_s")
	b.ReportMetric(wall, "wall_s")
}
