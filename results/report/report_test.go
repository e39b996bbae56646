package report

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"ctxlab/results"
	"ctxlab/specs"
)

func handReport(t *testing.T, o Options) *Report {
	t.Helper()
	rows, bad, err := results.ReadFile(filepath.Join("testdata", "hand.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if o.Title == "" {
		o.Title, o.Source = "hand", "testdata/hand.jsonl"
	}
	r, err := Build(rows, bad, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHandComputedTable checks the report of testdata/hand.jsonl against values worked out by hand:
//
//	A (6 issues): resolved i1 i2 i3 i5 = 4/6 = 66.7%; applied 5/6 = 83.3%; rho (1+1+.5+0+1+0)/6 = 0.583;
//	  epsilon 1; gold-line share (.5+.4+.3+0+.6+0)/6 = 0.300; rho = 0 on i4, i6: 33.3%; tokens 100..600: mean and
//	  median 350; cost (.1+.2+.1+.2+.1+.2)/6 = 0.150; fallback 1/6 = 16.7%; loc F1 carried by no row: –.
//	  Bootstrap: a resample's mean is Binomial(6, 2/3)/6; P(X<=1) = 0.018 < 0.025 < P(X<=2) = 0.100 and
//	  P(X<=5) = 0.912 < 0.975, so the 95% interval is [2/6, 6/6] = [33.3, 100.0].
//	B (6): resolved i2 i6 = 33.3%; applied i2 i3 i6 = 50.0%; rho 0.5, none 0 -> 0.0%; epsilon 0.8; gold-line
//	  share null everywhere: –; tokens 100; cost and fallback: –. Binomial(6, 1/3): P(X=0) = 0.088 > 0.025 and
//	  P(X<=3) = 0.900 < 0.975 < P(X<=4) = 0.982: [0.0, 66.7].
//	C (3 issues, partial; the second i3 row is a duplicate and ignored; i2 is an error row): resolved i1 i3 =
//	  66.7%; applied 2/3; rho (1+0)/2 = 0.500, rho = 0 on 1 of 2 rows: 50.0%; epsilon (1+.5)/2 = 0.750; tokens
//	  (50+150)/2 = 100. Binomial(3, 2/3): P(X=0) = 0.037 > 0.025: [0.0, 100.0].
//	A vs B on 6 issues: only A i1 i3 i5 = 3, only B i6 = 1: p = P(X>=3), X ~ Bin(4, 1/2) = 5/16 = 0.3125.
//	A vs C on i1..i3: only A i2 = 1, only C 0: p = 1/2. Holm: 2 x 0.3125 = 0.625; max(0.625, 1 x 0.5) = 0.625.
func TestHandComputedTable(t *testing.T) {
	r := handReport(t, Options{})
	if r.Rows != 15 || r.Instances != 6 || r.Duplicates != 1 || len(r.Bad) != 1 || r.Bad[0].Line != 17 {
		t.Errorf("rows %d instances %d duplicates %d bad %+v", r.Rows, r.Instances, r.Duplicates, r.Bad)
	}
	md := r.Markdown()
	for _, want := range []string{
		"| A | m | 6 | 0 | 66.7 | [33.3, 100.0] | 83.3 | 0.583 | 1.000 | 0.300 | 33.3 | 350 | 350 | 0.150 | 16.7 | – |",
		"| B | m | 6 | 0 | 33.3 | [0.0, 66.7] | 50.0 | 0.500 | 0.800 | – | 0.0 | 100 | 100 | – | – | – |",
		"| C | m | 3 | 1 | 66.7 | [0.0, 100.0] | 66.7 | 0.500 | 0.750 | – | 50.0 | 100 | 100 | – | – | – |",
		"C has rows for 3 of the 6 issues",
		"Anchor: A (the first method)",
		"1 rows carry an error",
		"line 17",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	// Comparison rows; the diff interval is random, the rest is not.
	cmpRow := regexp.MustCompile(`(?m)^\| m \| A \| B \| 6 \| 66\.7 \| 33\.3 \| \+33\.3 \| \[[-0-9.]+, [-0-9.]+\] \| 3 \| 1 \| A \| A > B \| 0\.31[23] \| 0\.625 \|  \|$`)
	if !cmpRow.MatchString(md) {
		t.Errorf("A vs B row wrong:\n%s", md)
	}
	cmpRow = regexp.MustCompile(`(?m)^\| m \| A \| C \| 3 \| 100\.0 \| 66\.7 \| \+33\.3 \| \[[-0-9.]+, [-0-9.]+\] \| 1 \| 0 \| A \| A > C \| 0\.500 \| 0\.625 \|  \|$`)
	if !cmpRow.MatchString(md) {
		t.Errorf("A vs C row wrong:\n%s", md)
	}
	var csv string
	for _, tb := range r.Tables() {
		if tb.Name == "comparisons" {
			csv = tb.CSV()
		}
	}
	if !strings.Contains(csv, ",3,1,A,A > B,0.3125,0.625,\n") || !strings.Contains(csv, ",1,0,A,A > C,0.5,0.625,\n") {
		t.Errorf("comparisons CSV:\n%s", csv)
	}
}

func TestAnchorAndAlternative(t *testing.T) {
	r := handReport(t, Options{Anchor: "B", AnchorFrom: "--anchor"})
	// B vs A: only B 1, only A 3: observed direction favours A: p = P(X>=3 | 4) = 0.3125, better A.
	c := r.Comparisons[0]
	if c.Method != "A" || c.OnlyAnchor != 1 || c.OnlyMethod != 3 || c.Better != "A" || c.Tested != "A" || c.P != 0.3125 {
		t.Errorf("observed alternative: %+v", c)
	}
	r = handReport(t, Options{Anchor: "B", Alternative: AltAnchor})
	// Anchor direction: p = P(X>=1 | 4) = 15/16. The test is of "B > A", but the data favour A: better says so.
	if c := r.Comparisons[0]; c.Better != "A" || c.Tested != "B" || c.Hypothesis() != "B > A" || c.P != 15.0/16 {
		t.Errorf("anchor alternative: %+v", c)
	}
	rows, bad, _ := results.ReadFile(filepath.Join("testdata", "hand.jsonl"))
	if _, err := Build(rows, bad, Options{Anchor: "nope", AnchorFrom: "--anchor"}); err == nil ||
		!strings.Contains(err.Error(), `anchor "nope" (--anchor) has no rows`) {
		t.Errorf("unknown anchor error: %v", err)
	}
}

func TestWriteFilesAndLaTeX(t *testing.T) {
	r := handReport(t, Options{})
	dir := t.TempDir()
	paths, err := r.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.md", "tables/methods.csv", "tables/methods.tex", "tables/comparisons.tex"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s not written (wrote %v)", name, paths)
		}
	}
	tex, _ := os.ReadFile(filepath.Join(dir, "tables", "methods.tex"))
	if !strings.Contains(string(tex), "B & m & 6 & 0 & 33.3 & [0.0, 66.7] & 50.0 & 0.500 & 0.800 & -- &") ||
		!strings.Contains(string(tex), `\toprule`) || !strings.Contains(string(tex), `resolved \%`) {
		t.Errorf("methods.tex:\n%s", tex)
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "tables", "methods.csv"))
	// Missing values are empty CSV cells, never 0.
	if !strings.Contains(string(csv), "\nB,m,6,0,33.333333,0;66.666667,50,0.5,0.8,,0,100,100,,,,,,,,\n") {
		t.Errorf("methods.csv:\n%s", csv)
	}
}

func TestBudgetMultipliers(t *testing.T) {
	var rows []results.Row
	add := func(method string, extra map[string]any, res ...bool) {
		for i, v := range res {
			r := results.Row{results.FieldInstance: string(rune('a' + i)), results.FieldMethod: method,
				results.FieldModel: "m", specs.Resolved.Name: v}
			for k, x := range extra {
				r[k] = x
			}
			rows = append(rows, r)
		}
	}
	add("cq2care", nil, true, true, false, true)
	add("bm25", nil, true, false, false, true)
	add("bm25@0.5x", nil, false, false, false, true)
	add("bm25_big", map[string]any{specs.BudgetMultiplier.Name: 2.0}, true, true, false, true)
	r, err := Build(rows, nil, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, b := range r.Budget {
		got[b.Method] = b.Multiplier
		if b.Method == "bm25@0.5x" && (b.Base != "bm25" || b.ResolvedPct != 25) {
			t.Errorf("budget point %+v", b)
		}
	}
	// bm25_big's single 2x point is no sweep of its own.
	if len(got) != 2 || got["bm25"] != 1 || got["bm25@0.5x"] != 0.5 {
		t.Errorf("multipliers %v (cq2care and bm25_big must have none)", got)
	}
	if !strings.Contains(r.Markdown(), "## Budget sweep") {
		t.Errorf("no budget section")
	}
}

// outcomes builds rows of one model "m": for each method, resolved per instance i0, i1, ...
func outcomes(methods map[string][]bool, extra map[string]map[string]any) []results.Row {
	var rows []results.Row
	for _, name := range slices.Sorted(maps.Keys(methods)) {
		for i, v := range methods[name] {
			r := results.Row{results.FieldInstance: fmt.Sprintf("i%d", i), results.FieldMethod: name,
				results.FieldModel: "m", specs.Resolved.Name: v}
			for k, x := range extra[name] {
				r[k] = x
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// TestTiedComparisonClaimsNoDirection: equal discordant counts (0-0 and 2-2) claim no better side under either
// alternative; a non-zero difference does.
func TestTiedComparisonClaimsNoDirection(t *testing.T) {
	rows := outcomes(map[string][]bool{
		"anchor": {true, true, false, false, true, false},
		"same":   {true, true, false, false, true, false}, // 0 discordant pairs
		"swap":   {false, false, true, true, true, false}, // 2 only anchor, 2 only swap
		"worse":  {false, true, false, false, true, false},
	}, nil)
	for _, alt := range []string{AltObserved, AltAnchor} {
		r, err := Build(rows, nil, Options{Anchor: "anchor", Alternative: alt, Resamples: 200})
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]Comparison{}
		for _, c := range r.Comparisons {
			by[c.Method] = c
		}
		if c := by["same"]; c.Better != "" || c.BetterText() != NoDifference || c.P != 1 || c.DiffPts != 0 {
			t.Errorf("%s: 0 discordant: %+v", alt, c)
		}
		if c := by["swap"]; c.OnlyAnchor != 2 || c.OnlyMethod != 2 || c.Better != "" || c.BetterText() != NoDifference ||
			c.P != 11.0/16 {
			t.Errorf("%s: 2-2 tie: %+v", alt, c)
		}
		// Only the anchor alternative, fixed in advance, names a side on a tie.
		wantH1 := map[string]string{AltObserved: "", AltAnchor: "anchor > swap"}[alt]
		if h := by["swap"].Hypothesis(); h != wantH1 {
			t.Errorf("%s: tie's H1 %q, want %q", alt, h, wantH1)
		}
		if c := by["worse"]; c.Better != "anchor" || c.Hypothesis() != "anchor > worse" || c.P != 0.5 {
			t.Errorf("%s: 1-0: %+v", alt, c)
		}
		md := r.Markdown()
		for _, m := range []string{"same", "swap"} {
			line := regexp.MustCompile(`(?m)^\| m \| anchor \| ` + m + ` \|.*$`).FindString(md)
			if cells := strings.Split(strings.Trim(line, "| "), " | "); len(cells) < 11 || cells[10] != NoDifference {
				t.Errorf("%s: tied row claims a direction: %q", alt, line)
			}
		}
		if !strings.Contains(md, "The test is one-sided") {
			t.Errorf("%s: report does not say the test is one-sided", alt)
		}
	}
}

// TestBudgetSweepOnlyWithSeveralBudgets: every method at a single 1x point (as every fitted method is) makes no
// budget section, no budget table and no multiplier column; a base at several multipliers does, found by
// NAME@0.5x or by the fitted baselines' NAME_x0_5 names.
func TestBudgetSweepOnlyWithSeveralBudgets(t *testing.T) {
	one := map[string]any{specs.BudgetMultiplier.Name: 1.0}
	res := []bool{true, false, true, true}
	r, err := Build(outcomes(map[string][]bool{"cq2care": res, "bm25": res, "lingua": res},
		map[string]map[string]any{"bm25": one, "lingua": one}), nil, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	md := r.Markdown()
	if len(r.Budget) != 0 || strings.Contains(md, "Budget sweep") || strings.Contains(md, "budget x") {
		t.Errorf("single 1x points made a budget sweep: %+v\n%s", r.Budget, md)
	}
	for _, tb := range r.Tables() {
		if tb.Name == "budget" {
			t.Errorf("budget table written for single points")
		}
	}
	r, err = Build(outcomes(map[string][]bool{"cq2care": res, "bm25_function": res, "bm25_function_x0_5": res,
		"bm25_function_x2": res, "lingua": res},
		map[string]map[string]any{"bm25_function": one, "bm25_function_x0_5": {specs.BudgetMultiplier.Name: 0.5},
			"bm25_function_x2": {specs.BudgetMultiplier.Name: 2.0}, "lingua": one}), nil, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range r.Budget {
		got = append(got, fmt.Sprintf("%s@%g", b.Base, b.Multiplier))
	}
	if strings.Join(got, " ") != "bm25_function@0.5 bm25_function@1 bm25_function@2" {
		t.Errorf("budget points %v", got)
	}
	if !strings.Contains(r.Markdown(), "## Budget sweep") {
		t.Errorf("no budget section for a three-point sweep")
	}
}

// TestDisagreementsMatchMcNemarCounts: the disagreement lists of every comparison hold exactly as many issues as
// its discordant counts, each resolved by the side it is listed under, with both sides' metrics; an extra pair
// (two non-anchor methods) is listed too, and its CSV has one line per issue.
func TestDisagreementsMatchMcNemarCounts(t *testing.T) {
	r := handReport(t, Options{Pairs: [][2]string{{"B", "C"}}})
	if len(r.Pairs) != len(r.Comparisons)+1 {
		t.Fatalf("%d pairs for %d comparisons + 1", len(r.Pairs), len(r.Comparisons))
	}
	for i, c := range r.Comparisons {
		p := r.Pairs[i]
		if p.A != c.Anchor || p.B != c.Method || len(p.OnlyA) != c.OnlyAnchor || len(p.OnlyB) != c.OnlyMethod {
			t.Errorf("pair %s/%s: %d+%d listed, McNemar %d+%d", p.A, p.B, len(p.OnlyA), len(p.OnlyB), c.OnlyAnchor, c.OnlyMethod)
		}
	}
	// By hand (see TestHandComputedTable): only A resolves i1 i3 i5, only B i6; A rho on i1 1, B rho 0.5.
	ab := r.Pairs[0]
	var onlyA []string
	for _, d := range ab.OnlyA {
		onlyA = append(onlyA, d.Instance)
	}
	if strings.Join(onlyA, " ") != "i1 i3 i5" || len(ab.OnlyB) != 1 || ab.OnlyB[0].Instance != "i6" ||
		ab.OnlyB[0].ResolvedBy != "B" || PairColumns[0].Field.Name != specs.Rho.Name || ab.OnlyA[0].A[0] != some(1) ||
		ab.OnlyA[0].B[0] != some(0.5) {
		t.Errorf("A vs B disagreements %+v", ab)
	}
	// B vs C on i1..i3 (C's duplicate i3 row ignored): B resolves i2 only; C resolves i1, i3 (i2 is C's error row).
	bc := r.Pairs[len(r.Pairs)-1]
	if bc.A != "B" || bc.B != "C" || len(bc.OnlyA) != 1 || len(bc.OnlyB) != 2 {
		t.Errorf("B vs C disagreements %+v", bc)
	}
	var csv string
	for _, tb := range r.Tables() {
		if tb.Name == "disagreements" {
			csv = tb.CSV()
		}
	}
	want := 1 + 4 + 1 + 3 // header, A-B, A-C, B-C
	if got := strings.Count(csv, "\n"); got != want || !strings.Contains(csv, "m,A,B,i6,B,") {
		t.Errorf("disagreements CSV has %d lines, want %d:\n%s", got, want, csv)
	}
	if !strings.Contains(r.Markdown(), "## Disagreements") {
		t.Errorf("no disagreements section")
	}
	rows, bad, _ := results.ReadFile(filepath.Join("testdata", "hand.jsonl"))
	if _, err := Build(rows, bad, Options{Pairs: [][2]string{{"A", "nope"}}}); err == nil {
		t.Errorf("pair with an unknown method accepted")
	}
}
