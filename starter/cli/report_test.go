package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
	"ctxlab/starter/sweepclient"
)

func TestParseReportAndPredict(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseReport([]string{"demo", "--fit", "a,b", "--fit", "c", "--anchor", "x", "--seed", "7"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.Name != "demo" || strings.Join(o.Fit, ",") != "a,b,c" || o.Anchor != "x" || o.Seed != 7 || o.Resamples != 20000 {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range [][]string{{}, {"a", "b"}, {"a", "--alternative", "both"}, {"a", "--resamples", "5"}} {
		if _, err := parseReport(bad, &stderr); err == nil {
			t.Errorf("report %v accepted", bad)
		}
	}
	if _, err := parsePredict([]string{"demo", "--method", "m"}, &stderr); err == nil {
		t.Error("predict without --fit accepted")
	}
}

// TestReportCommand runs report and predict as a user does on a run folder with a recorded spec: the spec's anchor
// is used, the files are written, a frozen prediction is checked.
func TestReportCommand(t *testing.T) {
	runs := t.TempDir()
	dir := filepath.Join(runs, "exp")
	r := rand.New(rand.NewPCG(1, 2))
	lr := rand.New(rand.NewPCG(3, 4))
	store := results.Store{Path: filepath.Join(dir, "results.jsonl")}
	var rows []results.Row
	for i := range 80 {
		for _, m := range []struct {
			name     string
			rho, eps float64
		}{{"files", 0.9, 1}, {"bm25", 0.4, 1}, {"lingua", 0.8, 0.3}, {"newbie", 0.7, 0.8}} {
			rho := m.rho + 0.2*(r.Float64()-0.5)
			eps := m.eps - 0.1*r.Float64()
			row := results.Row{results.FieldInstance: fmt.Sprintf("i%02d", i), results.FieldMethod: m.name,
				results.FieldModel: "offline", specs.Rho.Name: rho, specs.Epsilon.Name: eps,
				specs.ContextTokens.Name: 1000 + r.Float64()*500, specs.PatchApplied.Name: true,
				results.FieldError: nil, specs.Resolved.Name: r.Float64() < rho*eps}
			// Line recall from a stream of its own, so the other fields stay as they were drawn before it existed.
			row[specs.LineRecall.Name] = min(1, max(0, rho*eps+0.3*(lr.Float64()-0.5)))
			if m.name == "newbie" {
				row[specs.Resolved.Name] = nil // measured, not graded yet
			}
			rows = append(rows, row)
		}
	}
	if _, err := store.Append(rows); err != nil {
		t.Fatal(err)
	}
	e := &specs.Experiment{Name: "exp", Anchor: "files", Models: []specs.Model{{Name: "offline"}},
		Methods: []specs.Method{{Name: "files"}, {Name: "bm25"}, {Name: "lingua"}, {Name: "newbie"}}}
	if err := sweepclient.WriteSpecRecord(dir, e); err != nil {
		t.Fatal(err)
	}

	var out, errb bytes.Buffer
	if code := Main([]string{"predict", "exp", "--runs", runs, "--method", "newbie", "--fit", "files,bm25,lingua",
		"--features", "rho,epsilon", "--replicates", "300"}, &out, &errb); code != 0 {
		t.Fatalf("predict exit %d: %s", code, errb.String())
	}
	frozen, _ := filepath.Glob(filepath.Join(dir, "predictions", "newbie.offline.*.json"))
	if len(frozen) != 1 || !strings.Contains(out.String(), "frozen: "+frozen[0]) {
		t.Fatalf("frozen files %v; output %s", frozen, out.String())
	}
	var p struct {
		PredictedPct float64 `json:"predicted_pct"`
		OutcomesSeen int     `json:"outcomes_seen"`
	}
	b, _ := os.ReadFile(frozen[0])
	if err := json.Unmarshal(b, &p); err != nil || p.OutcomesSeen != 0 || p.PredictedPct <= 0 {
		t.Errorf("prediction file: %v %+v", err, p)
	}

	// Grade newbie: a later results file of the same run (the new sweep of the full spec).
	for _, row := range rows {
		if row.String(results.FieldMethod) == "newbie" {
			rho, _ := row.Float(specs.Rho.Name)
			eps, _ := row.Float(specs.Epsilon.Name)
			row[specs.Resolved.Name] = r.Float64() < rho*eps
		}
	}
	if err := os.Remove(store.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(rows); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := Main([]string{"report", "exp", "--runs", runs, "--resamples", "2000"}, &out, &errb); code != 0 {
		t.Fatalf("report exit %d: %s", code, errb.String())
	}
	for _, f := range []string{"report.md", "tables/methods.csv", "tables/methods.tex", "tables/comparisons.csv",
		"tables/predictions.csv", "tables/regression.tex", "figures/resolve_ci.png", "figures/resolve_ci.svg",
		"figures/rho_epsilon.svg", "figures/line_recall_resolve.png", "figures/line_recall_resolve.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not written", f)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"# Report: exp", "Anchor: files (the spec's budget anchor)", "| offline | files | bm25 | 80 |",
		"## Frozen predictions", "| newbie | offline |", "![resolve_ci](figures/resolve_ci.png)",
		"![line_recall_resolve](figures/line_recall_resolve.png)", "| line recall |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !strings.Contains(out.String(), "report: "+filepath.Join(dir, "report.md")) {
		t.Errorf("stdout: %s", out.String())
	}
	// The same results file named by path, with --anchor: the flag wins over the spec.
	out.Reset()
	if code := Main([]string{"report", store.Path, "--anchor", "bm25", "--no-figures", "--resamples", "200",
		"--out", filepath.Join(runs, "alt")}, &out, &errb); code != 0 {
		t.Fatalf("report by path exit %d: %s", code, errb.String())
	}
	md, _ = os.ReadFile(filepath.Join(runs, "alt", "report.md"))
	if !strings.Contains(string(md), "Anchor: bm25 (--anchor)") {
		t.Errorf("anchor flag ignored:\n%s", md)
	}
	if code := Main([]string{"report", "nothere", "--runs", runs}, &out, &errb); code != exitcode.Usage ||
		!strings.Contains(errb.String(), "no results at") {
		t.Errorf("missing run: exit %d, %s", code, errb.String())
	}
}
