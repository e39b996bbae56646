package report

import (
	"slices"

	"ctxlab/results"
	"ctxlab/specs"
)

// Disagreement is one issue that exactly one of two methods resolves: one discordant pair of their McNemar test,
// with each side's context metrics.
type Disagreement struct {
	Instance string
	// ResolvedBy is the method that resolved the issue (A or B of its Pair).
	ResolvedBy string
	// A and B are each side's values of PairColumns, in their order.
	A, B []results.Value
}

// PairColumns are the fields each side of a disagreement shows (specs.PairsTable).
var PairColumns = specs.Columns(specs.PairsTable)

// Pair lists the issues behind the discordant counts of methods A and B under one model: OnlyA are the issues
// only A resolves, OnlyB those only B resolves, each sorted by instance.
type Pair struct {
	Model, A, B  string
	OnlyA, OnlyB []Disagreement
}

// Disagree pairs the rows of methods a and b of one model by instance and returns the issues exactly one of them
// resolves. Rows of other methods or models are ignored; the first row of a (instance, method, model) counts, and of a
// method of several patch samples its sample 0 (pairedSample).
func Disagree(rows []results.Row, model, a, b string) Pair {
	p := Pair{Model: model, A: a, B: b}
	byA, byB := map[string]results.Row{}, map[string]results.Row{}
	var order []string
	for _, r := range rows {
		if r.String(results.FieldModel) != model || !pairedSample(r) {
			continue
		}
		inst := r.String(results.FieldInstance)
		switch r.String(results.FieldMethod) {
		case a:
			if _, ok := byA[inst]; !ok {
				byA[inst] = r
				order = append(order, inst)
			}
		case b:
			if _, ok := byB[inst]; !ok {
				byB[inst] = r
			}
		}
	}
	slices.Sort(order)
	for _, inst := range order {
		ra, rb := byA[inst], byB[inst]
		if rb == nil || resolved(ra) == resolved(rb) {
			continue
		}
		d := Disagreement{Instance: inst}
		for _, c := range PairColumns {
			d.A, d.B = append(d.A, ra.FieldValue(c.Field)), append(d.B, rb.FieldValue(c.Field))
		}
		if resolved(ra) {
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
