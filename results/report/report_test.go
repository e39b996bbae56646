package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ctxlab/results"
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
	cmpRow := regexp.MustCompile(`(?m)^\| m \| A \| B \| 6 \| 66\.7 \| 33\.3 \| \+33\.3 \| \[[-0-9.]+, [-0-9.]+\] \| 3 \| 1 \| A \| 0\.31[23] \| 0\.625 \|  \|$`)
	if !cmpRow.MatchString(md) {
		t.Errorf("A vs B row wrong:\n%s", md)
	}
	cmpRow = regexp.MustCompile(`(?m)^\| m \| A \| C \| 3 \| 100\.0 \| 66\.7 \| \+33\.3 \| \[[-0-9.]+, [-0-9.]+\] \| 1 \| 0 \| A \| 0\.500 \| 0\.625 \|  \|$`)
	if !cmpRow.MatchString(md) {
		t.Errorf("A vs C row wrong:\n%s", md)
	}
	var csv string
	for _, tb := range r.Tables() {
		if tb.Name == "comparisons" {
			csv = tb.CSV()
		}
	}
	if !strings.Contains(csv, ",3,1,A,0.3125,0.625,\n") || !strings.Contains(csv, ",1,0,A,0.5,0.625,\n") {
		t.Errorf("comparisons CSV:\n%s", csv)
	}
}

func TestAnchorAndAlternative(t *testing.T) {
	r := handReport(t, Options{Anchor: "B", AnchorFrom: "--anchor"})
	// B vs A: only B 1, only A 3: observed direction favours A: p = P(X>=3 | 4) = 0.3125, better A.
	c := r.Comparisons[0]
	if c.Method != "A" || c.OnlyAnchor != 1 || c.OnlyMethod != 3 || c.Better != "A" || c.P != 0.3125 {
		t.Errorf("observed alternative: %+v", c)
	}
	r = handReport(t, Options{Anchor: "B", Alternative: AltAnchor})
	// Anchor direction: p = P(X>=1 | 4) = 15/16.
	if c := r.Comparisons[0]; c.Better != "B" || c.P != 15.0/16 {
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
	if !strings.Contains(string(csv), "\nB,m,6,0,33.333333,0;66.666667,50,0.5,0.8,,0,100,100,,,\n") {
		t.Errorf("methods.csv:\n%s", csv)
	}
}

func TestBudgetMultipliers(t *testing.T) {
	var rows []results.Row
	add := func(method string, extra map[string]any, res ...bool) {
		for i, v := range res {
			r := results.Row{results.FieldInstance: string(rune('a' + i)), results.FieldMethod: method,
				results.FieldModel: "m", results.FieldResolved: v}
			for k, x := range extra {
				r[k] = x
			}
			rows = append(rows, r)
		}
	}
	add("cq2care", nil, true, true, false, true)
	add("bm25", nil, true, false, false, true)
	add("bm25@0.5x", nil, false, false, false, true)
	add("bm25_big", map[string]any{FieldBudgetMultiplier: 2.0}, true, true, false, true)
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
	if len(got) != 3 || got["bm25"] != 1 || got["bm25@0.5x"] != 0.5 || got["bm25_big"] != 2 {
		t.Errorf("multipliers %v (cq2care must have none)", got)
	}
	if !strings.Contains(r.Markdown(), "## Budget sweep") {
		t.Errorf("no budget section")
	}
}
