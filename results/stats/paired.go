package stats

// PairedIssue is one issue of a paired comparison of methods A and B: each method's patch samples of it (a method
// of one sample has N = 1).
type PairedIssue struct{ A, B SampleCounts }

// PairedMeans compares two methods on per-issue means: each issue's resolved share of its samples, for each
// method, so that k samples of an issue weigh as one issue and methods of different k pair.
type PairedMeans struct {
	// Issues is the number of paired issues; A and B the means over them of each method's per-issue means.
	Issues int
	A, B   float64
	// CI is the percentile interval of A - B when issues are resampled with replacement, each with all the
	// samples of both methods.
	CI Interval
	// AHigher and BHigher count the issues whose per-issue mean is higher for A, and for B: the signs of the
	// per-issue differences (ties left out), which SignTest takes. With one sample each they are McNemar's
	// discordant pairs.
	AHigher, BHigher int
}

// Mean is the share of the issue's samples that resolved it; NaN with no sample.
func (s SampleCounts) Mean() float64 { return float64(s.C) / float64(s.N) }

// PairedPerIssueMeans compares methods A and B on issues, each with at least one sample of both (the caller pairs
// them). The interval resamples issues: an issue's per-issue means travel together, which is resampling it with
// all its samples.
func (b Bootstrap) PairedPerIssueMeans(issues []PairedIssue, level float64) PairedMeans {
	out := PairedMeans{Issues: len(issues)}
	a, c := make([]float64, len(issues)), make([]float64, len(issues))
	sa, sc := 0.0, 0.0
	for i, is := range issues {
		a[i], c[i] = is.A.Mean(), is.B.Mean()
		sa, sc = sa+a[i], sc+c[i]
		switch {
		case a[i] > c[i]:
			out.AHigher++
		case c[i] > a[i]:
			out.BHigher++
		}
	}
	out.A, out.B = sa/float64(len(issues)), sc/float64(len(issues))
	out.CI = b.PairedDiffCI(a, c, level)
	return out
}

// SignTest is the one-sided exact sign test of paired differences: with higher issues where the tested side's
// per-issue mean is above the other's and lower where it is below (ties carry no sign and do not enter), the
// chance of at least higher positive signs among higher+lower if neither side were better. On binary outcomes it is
// McNemar's exact test, whose discordant pairs are exactly the non-zero differences.
func SignTest(higher, lower int) float64 { return McNemarExact(higher, lower) }
