package report

import (
	"math"
	"strings"
	"testing"

	"ctxlab/results"
)

// TestReportSamples: a method of three samples on four issues, counted by hand, beside a method of one sample,
// which gets no line and no sample note of its own.
//
//	issue  samples  resolved
//	a      1 1 1    3
//	b      1 0 0    1
//	c      0 0 0    0
//	d      0 1 -    1 (its third sample's row is missing)
//
// mean resolved (per issue) = (1 + 1/3 + 0 + 1/2)/4 = 11/24; pass@3 over a, b, c = 2/3; majority: a, d is a tie,
// so 1/4; any: a, b, d = 3/4; flip: b and d of 4 = 1/2.
func TestReportSamples(t *testing.T) {
	var rows []results.Row
	add := func(inst, method string, sample int, ok bool) {
		r := results.Row{results.FieldInstance: inst, results.FieldMethod: method, results.FieldModel: "m",
			"resolved": ok, results.FieldError: nil}
		if sample >= 0 {
			r[results.FieldSample] = float64(sample)
		}
		rows = append(rows, r)
	}
	for inst, outcomes := range map[string][]bool{"a": {true, true, true}, "b": {true, false, false},
		"c": {false, false, false}, "d": {false, true}} {
		for s, ok := range outcomes {
			add(inst, "sampled", s, ok)
		}
		add(inst, "single", -1, inst == "a")
	}
	r, err := Build(rows, nil, Options{Title: "t", Resamples: 2000, Seed: 1, Anchor: "single"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Samples) != 1 {
		t.Fatalf("samples %+v, want the sampled method only", r.Samples)
	}
	s := r.Samples[0]
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if s.Method != "sampled" || s.K != 3 || s.Issues != 4 || s.PassIssues != 3 {
		t.Errorf("stats %+v", s)
	}
	near("mean", s.MeanPct, 100*11.0/24)
	near("pass@3", s.PassAtKPct, 100*2.0/3)
	near("majority", s.MajorityPct, 25)
	near("any", s.AnyPct, 75)
	near("flip", s.FlipPct, 50)
	if !s.FlipCI.Contains(50) || s.FlipCI.Lo < 0 || s.FlipCI.Hi > 100 {
		t.Errorf("flip interval %+v", s.FlipCI)
	}
	md := r.Markdown()
	if !strings.Contains(md, "## Repeated samples") || !strings.Contains(md, "| sampled | m | 3 | 4 | 45.8 | 66.7 | 3 | 25.0 | 75.0 | 50.0 |") {
		t.Errorf("report.md lacks the samples table:\n%s", md)
	}
	// The rows of samples are one row each, not duplicates of one another.
	if r.Duplicates != 0 || r.Rows != len(rows) {
		t.Errorf("%d rows, %d duplicates", r.Rows, r.Duplicates)
	}
}

// A method of several samples is paired with the anchor once per issue, by its sample 0, on either side of the
// comparison: three samples of one issue are not three paired issues.
func TestComparisonsPairSampleZeroOncePerIssue(t *testing.T) {
	var rows []results.Row
	add := func(inst, method string, sample int, ok bool) {
		r := results.Row{results.FieldInstance: inst, results.FieldMethod: method, results.FieldModel: "m",
			"resolved": ok, results.FieldError: nil}
		if sample >= 0 {
			r[results.FieldSample] = float64(sample)
		}
		rows = append(rows, r)
	}
	// Sample 0 resolves a and b; the later samples resolve only c, so a comparison on any other sample differs.
	for _, inst := range []string{"a", "b", "c", "d"} {
		add(inst, "single", -1, inst == "a")
		for s := range 3 {
			add(inst, "sampled", s, (s == 0) == (inst == "a" || inst == "b") && (s == 0 || inst == "c"))
		}
	}
	for _, anchor := range []string{"single", "sampled"} {
		r, err := Build(rows, nil, Options{Title: "t", Resamples: 200, Seed: 1, Anchor: anchor})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Comparisons) != 1 {
			t.Fatalf("anchor %s: comparisons %+v", anchor, r.Comparisons)
		}
		c := r.Comparisons[0]
		sampledPct := c.MethodPct
		if anchor == "sampled" {
			sampledPct = c.AnchorPct
		}
		if c.Paired != 4 || sampledPct != 50 {
			t.Errorf("anchor %s: %d paired, sampled at %.1f%%; want 4 issues and sample 0's 50%%", anchor, c.Paired,
				sampledPct)
		}
	}
	if d := Disagree(rows, "m", "single", "sampled"); len(d.OnlyA) != 0 || len(d.OnlyB) != 1 || d.OnlyB[0].Instance != "b" {
		t.Errorf("disagreements %+v, want issue b only, sampled's (its sample 0)", d)
	}
}
