package report

import (
	"slices"

	"ctxlab/results"
	"ctxlab/results/stats"
	"ctxlab/specs"
)

// Disagreement is one issue that exactly one of two methods resolves: one discordant pair of their McNemar test,
// with each side's context metrics. Of a method of several patch samples, it is an issue whose per-issue means
// differ: one sign of the comparison's sign test.
type Disagreement struct {
	Instance string
	// ResolvedBy is the method that resolved the issue (A or B of its Pair): of methods of samples, the one whose
	// per-issue mean is higher.
	ResolvedBy string
	// A and B are each side's values of PairColumns, in their order: of a method of samples, those of its first
	// row of the issue (every sample shares the context they measure).
	A, B []results.Value
}

// PairColumns are the fields each side of a disagreement shows (specs.PairsTable).
var PairColumns = specs.Columns(specs.PairsTable)

// Pair lists the issues behind the discordant counts of methods A and B under one model: OnlyA are the issues
// only A resolves (A's per-issue mean is higher), OnlyB those only B resolves, each sorted by instance.
type Pair struct {
	Model, A, B  string
	OnlyA, OnlyB []Disagreement
}

// issueSide is one method's rows of an issue: its first row, and its samples.
type issueSide struct {
	first   results.Row
	samples stats.SampleCounts
}

// Disagree pairs the rows of methods a and b of one model by instance and returns the issues where their per-issue
// means differ: with one sample each, the issues exactly one of them resolves. Rows of other methods or models are
// ignored, and so is a repeat of a (instance, method, model, sample) row after its first.
func Disagree(rows []results.Row, model, a, b string) Pair {
	p := Pair{Model: model, A: a, B: b}
	sides := map[string]map[string]*issueSide{a: {}, b: {}}
	seen := map[results.Key]bool{}
	var order []string
	for _, r := range rows {
		method := r.String(results.FieldMethod)
		if r.String(results.FieldModel) != model || (method != a && method != b) || seen[r.Key()] {
			continue
		}
		seen[r.Key()] = true
		inst := r.String(results.FieldInstance)
		side := sides[method][inst]
		if side == nil {
			side = &issueSide{first: r}
			sides[method][inst] = side
			if method == a {
				order = append(order, inst)
			}
		}
		side.samples.N++
		if resolved(r) {
			side.samples.C++
		}
	}
	slices.Sort(order)
	for _, inst := range order {
		sa, sb := sides[a][inst], sides[b][inst]
		if sb == nil || sa.samples.Mean() == sb.samples.Mean() {
			continue
		}
		d := Disagreement{Instance: inst}
		for _, c := range PairColumns {
			d.A, d.B = append(d.A, sa.first.FieldValue(c.Field)), append(d.B, sb.first.FieldValue(c.Field))
		}
		if sa.samples.Mean() > sb.samples.Mean() {
			d.ResolvedBy = a
			p.OnlyA = append(p.OnlyA, d)
		} else {
			d.ResolvedBy = b
			p.OnlyB = append(p.OnlyB, d)
		}
	}
	return p
}

// disagreements fills r.Pairs: one per paired comparison (anchor against method), then the extra pairs asked
// for, in that order, without repeats.
func (r *Report) disagreements(rows []results.Row, g grouped, extra [][2]string) {
	type id struct{ model, a, b string }
	seen := map[id]bool{}
	add := func(model, a, b string) {
		if seen[id{model, a, b}] {
			return
		}
		seen[id{model, a, b}] = true
		r.Pairs = append(r.Pairs, Disagree(rows, model, a, b))
	}
	for _, c := range r.Comparisons {
		if c.Paired > 0 {
			add(c.Model, c.Anchor, c.Method)
		}
	}
	for _, model := range g.models {
		for _, ab := range extra {
			_, okA := g.rows_[results.Key{Method: ab[0], Model: model}]
			_, okB := g.rows_[results.Key{Method: ab[1], Model: model}]
			if okA && okB {
				add(model, ab[0], ab[1])
			}
		}
	}
}
