package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"ctxlab/results"
	"ctxlab/specs"
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

// sampleRow is one row of method on inst: its sample index when sample >= 0, and an error of kind when kind is set
// (then it has no outcome).
func sampleRow(inst, method string, sample int, ok bool, kind string) results.Row {
	r := results.Row{results.FieldInstance: inst, results.FieldMethod: method, results.FieldModel: "m",
		specs.Resolved.Name: ok, results.FieldError: nil}
	if sample >= 0 {
		r[results.FieldSample] = float64(sample)
	}
	if kind != "" {
		r[results.FieldError], r[results.FieldErrorKind], r[specs.Resolved.Name] = "step failed: "+kind, kind, nil
	}
	return r
}

// TestComparisonsOnPerIssueMeans: a method of three samples against one of one sample, paired on per-issue means,
// counted by hand, with the anchor on either side:
//
//	issue  single  sampled               per-issue mean  single − sampled
//	a      1       1 0 0                 1/3             +2/3
//	b      0       1 0 0                 1/3             −1/3
//	c      0       0 1 (rate_limit)      1/3 (clean 1/2) −1/3
//	d      0       0 0                   0                0
//
// single 25%, sampled (1/3+1/3+1/3+0)/4 = 25%: diff 0, but 1 issue higher for single and 2 for sampled, so sampled
// is the better side with p = P(X >= 2), X ~ Bin(3, 1/2) = 1/2. On clean issues c's endpoint failure is left out
// (its mean is 1/2 of the two other samples) and the issue stays: sampled (1/3+1/3+1/2)/4 = 7/24. Sample 0 alone
// would say 50% (a, b) and pairing sample rows would count 12 pairs: both fail here.
func TestComparisonsOnPerIssueMeans(t *testing.T) {
	var rows []results.Row
	for inst, outcomes := range map[string][]bool{"a": {true, false, false}, "b": {true, false, false},
		"c": {false, true, false}, "d": {false, false, false}} {
		rows = append(rows, sampleRow(inst, "single", -1, inst == "a", ""))
		for s, ok := range outcomes {
			kind := ""
			if inst == "c" && s == 2 {
				kind = "rate_limit"
			}
			rows = append(rows, sampleRow(inst, "sampled", s, ok, kind))
		}
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for _, anchor := range []string{"single", "sampled"} {
		r, err := Build(rows, nil, Options{Title: "t", Resamples: 2000, Seed: 1, Anchor: anchor})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Comparisons) != 1 || len(r.CleanComparisons) != 1 {
			t.Fatalf("anchor %s: comparisons %+v, clean %+v", anchor, r.Comparisons, r.CleanComparisons)
		}
		c, clean := r.Comparisons[0], r.CleanComparisons[0]
		sampledPct, cleanPct, onlySingle, onlySampled := c.MethodPct, clean.MethodPct, c.OnlyAnchor, c.OnlyMethod
		if anchor == "sampled" {
			sampledPct, cleanPct, onlySingle, onlySampled = c.AnchorPct, clean.AnchorPct, c.OnlyMethod, c.OnlyAnchor
		}
		if !c.PerIssueMeans || c.Paired != 4 || onlySingle != 1 || onlySampled != 2 || c.Better != "sampled" {
			t.Errorf("anchor %s: %+v; want 4 issues, 1 higher for single, 2 for sampled", anchor, c)
		}
		near(anchor+": sampled %", sampledPct, 25)
		near(anchor+": diff", c.DiffPts, 0)
		near(anchor+": p", c.P, 0.5)
		near(anchor+": clean sampled %", cleanPct, 100*7.0/24)
		if clean.Paired != 4 {
			t.Errorf("anchor %s: clean comparison on %d issues, want 4", anchor, clean.Paired)
		}
		if !c.DiffCI.Contains(c.DiffPts) || c.DiffCI.Lo < -100 || c.DiffCI.Hi > 100 {
			t.Errorf("anchor %s: interval %+v", anchor, c.DiffCI)
		}
		md := r.Markdown()
		for _, want := range []string{"pairs per-issue means", "exact sign test on per-issue means for sampled",
			"resamples issues with all their samples"} {
			if !strings.Contains(md, want) {
				t.Errorf("anchor %s: report.md does not say %q:\n%s", anchor, want, md)
			}
		}
	}
	d := Disagree(rows, "m", "single", "sampled")
	var onlySampled []string
	for _, x := range d.OnlyB {
		onlySampled = append(onlySampled, x.Instance+"/"+x.ResolvedBy)
	}
	if len(d.OnlyA) != 1 || d.OnlyA[0].Instance != "a" || strings.Join(onlySampled, " ") != "b/sampled c/sampled" {
		t.Errorf("disagreements %+v, want a for single, b and c for sampled", d)
	}
}

// TestRepeatedSamplesCompareAsOne: an issue's samples stay together. The same outcomes repeated as 4 samples of
// one method and 2 of the other give the comparisons (counts, rates, interval, p), the disagreements and each
// method's resolve rate interval of the one-sample data, and only the latter reads as a report of one sample: no
// per-issue-means text.
func TestRepeatedSamplesCompareAsOne(t *testing.T) {
	gen := rand.New(rand.NewPCG(3, 4))
	var one, repeated []results.Row
	for i := range 30 {
		inst := fmt.Sprintf("i%02d", i)
		x, y := gen.IntN(3) > 0, gen.IntN(2) > 0
		one = append(one, sampleRow(inst, "x", -1, x, ""), sampleRow(inst, "y", -1, y, ""))
		for s := range 4 {
			repeated = append(repeated, sampleRow(inst, "x", s, x, ""))
		}
		for s := range 2 {
			repeated = append(repeated, sampleRow(inst, "y", s, y, ""))
		}
	}
	o := Options{Title: "t", Seed: 8, Anchor: "x"}
	want, err := Build(one, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Build(repeated, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	w, g := want.Comparisons[0], got.Comparisons[0]
	if w.PerIssueMeans || !g.PerIssueMeans {
		t.Errorf("per-issue means: one sample %v, repeated %v", w.PerIssueMeans, g.PerIssueMeans)
	}
	g.PerIssueMeans = false
	if g != w {
		t.Errorf("repeated samples compare as %+v; one sample as %+v", g, w)
	}
	if w.DiffCI.Hi-w.DiffCI.Lo < 10 {
		t.Fatalf("interval %+v too narrow to tell resampling issues from resampling sample rows", w.DiffCI)
	}
	for i := range want.Methods {
		if wm, gm := want.Methods[i], got.Methods[i]; gm.ResolvedPct != wm.ResolvedPct || gm.CI != wm.CI {
			t.Errorf("%s: repeated samples resolve %.1f%% %+v; one sample %.1f%% %+v", wm.Method, gm.ResolvedPct,
				gm.CI, wm.ResolvedPct, wm.CI)
		}
	}
	if !reflect.DeepEqual(want.Pairs, got.Pairs) {
		t.Errorf("disagreements: repeated %+v, one sample %+v", got.Pairs, want.Pairs)
	}
	if md := want.Markdown(); strings.Contains(md, "per-issue means") || strings.Contains(md, "sign test") {
		t.Errorf("a report of one sample per method talks of per-issue means:\n%s", md)
	}
}
