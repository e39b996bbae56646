package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"ctxlab/activities/api/errkind"
	"ctxlab/results"
	"ctxlab/results/stats"
	"ctxlab/specs"
)

// Alternatives of the one-sided McNemar test.
const (
	// AltObserved tests in the direction the data point: the side with more discordant wins is the claimed better
	// one (the paper states each result as "A beats B", with its one-sided p). Equal to half the two-sided exact p.
	// A tie (equal discordant counts) claims no side: its p is still computed, and is at least 1/2.
	AltObserved = "observed"
	// AltAnchor always tests "the anchor resolves more", a direction fixed before looking at the data.
	AltAnchor = "anchor"
)

// Options configure a report.
type Options struct {
	Title  string
	Source string
	// Order lists (method, model) pairs in the order the spec declares them; other pairs follow in the order they
	// first appear in the rows.
	Order []results.Key
	// Anchor is the method every other method is compared against; AnchorFrom says where it came from. Empty: the
	// first method.
	Anchor, AnchorFrom string
	// Resamples (default 20,000) and Seed drive every bootstrap interval; Level is the confidence level (0.95).
	Resamples int
	Seed      uint64
	Level     float64
	// Alternative is AltObserved (default) or AltAnchor.
	Alternative string
	// Fit names the methods the regression is fitted on (empty: all); Features its features (empty: Default).
	Fit      []string
	Features []string
	// Pairs are extra (A, B) method pairs whose disagreements are listed, besides each comparison's.
	Pairs [][2]string
	// Predictions are frozen predictions to check against the outcomes.
	Predictions []Prediction
}

// DefaultFeatures are the context features of the regression, as the row fields declare them (specs.Features):
// gold-file recall, verbatim rate, share of context lines in gold files, and log(1 + context tokens).
var DefaultFeatures []string

// declaredFeatures are the declared regression terms by name: a feature name that is none of them is a numeric row
// field.
var declaredFeatures = map[string]specs.FieldFeature{}

func init() {
	for _, f := range specs.Features() {
		DefaultFeatures = append(DefaultFeatures, f.Term(f.Field))
		declaredFeatures[f.Term(f.Field)] = f
	}
}

func some(v float64) results.Value { return results.Value{V: v, OK: true} }

// MethodColumns are the columns the declared row fields add to the per-method table (specs.MethodsTable), after
// its own: MethodStats.Stats holds their values in this order.
var MethodColumns = specs.Columns(specs.MethodsTable)

// MethodStats is one (method, model) line of the main table.
type MethodStats struct {
	Method, Model string
	// N is the number of issues with a row; Errors how many of those rows carry an error (they count as not
	// resolved and not applied).
	N, Errors int
	Resolved  int
	// ResolvedPct is 100·Resolved/N; CI its bootstrap interval in percent.
	ResolvedPct float64
	CI          stats.Interval
	// Stats are the values of MethodColumns (the share of rows whose patch applied, the context metrics' means,
	// the cost per issue ...), in their order.
	Stats []results.Value
	// Multiplier is the budget multiplier (OK when the rows or the name carry one); Base the method it scales.
	Multiplier results.Value
	Base       string
	// Clean counts the rows without an error: resolved and not; Errored the rows with one, by the class of their
	// error_kind (errkind.ClassOf: whose failure it is).
	CleanResolved, CleanUnresolved int
	Errored                        map[errkind.Class]int
	// Served counts the rows answered by another model than the spec's, by the model the endpoint named.
	Served map[string]int
}

// Comparison is one paired comparison of a method against the anchor under one model, on the issues both have.
type Comparison struct {
	Model, Anchor, Method string
	Paired                int
	// AnchorPct and MethodPct are resolve rates on the paired issues (means of per-issue means).
	AnchorPct, MethodPct float64
	// DiffPts is AnchorPct - MethodPct, with its paired bootstrap interval.
	DiffPts float64
	DiffCI  stats.Interval
	// PerIssueMeans is set when either method draws several patch samples, so that the report says what the
	// numbers are: each side of an issue its resolved share of its samples, the counts below the signs of the
	// per-issue differences, P the sign test on them (with one sample each, these are McNemar's).
	PerIssueMeans bool
	// OnlyAnchor and OnlyMethod are the discordant pairs: the issues whose per-issue mean is higher for the anchor,
	// and for the method (with one sample each, the issues only that side resolves).
	OnlyAnchor, OnlyMethod int
	// Better is the side that resolved more of the discordant pairs (Anchor or Method); empty when they tie
	// (OnlyAnchor == OnlyMethod): then no direction is claimed.
	Better string
	// Tested is the side the one-sided alternative hypothesis says is better: Better under AltObserved (empty on a
	// tie, whose p is the same for either side), always the anchor under AltAnchor. P is the one-sided exact sign
	// test of that alternative on the per-issue differences (stats.SignTest): exact McNemar with one sample each.
	Tested string
	P      float64
	PHolm  float64
	Stars  string
}

// BudgetPoint is one method at one budget multiplier.
type BudgetPoint struct {
	Base, Model, Method string
	Multiplier          float64
	N                   int
	ResolvedPct         float64
	CI                  stats.Interval
}

// Report is everything report.md shows.
type Report struct {
	Title, Source string
	Rows          int
	Instances     int
	Bad           []results.BadLine
	Duplicates    int
	Methods       []MethodStats
	Anchor        string
	AnchorFrom    string
	Alternative   string
	Comparisons   []Comparison
	// CleanComparisons are the same comparisons on the issues where neither row has an error that is not the
	// model's (the endpoint's, the configuration's, the machine's); empty when no row has such an error.
	CleanComparisons []Comparison
	// Pairs are the issues behind each comparison's discordant counts, then those of Options.Pairs.
	Pairs  []Pair
	Budget []BudgetPoint
	// BudgetFits are the fitted arms' achieved tokens against their budgets (the budget truth).
	BudgetFits  []BudgetFit
	Regressions []Regression
	Checks      []PredictionCheck
	// Samples are the repeated-sample measures of the methods whose rows carry a sample index.
	Samples []SampleStats
	// Figures are paths relative to the report's folder, filled in by whoever draws them.
	Figures []string
	// FigureCaptions are captions by figure name (file stem), filled in with Figures.
	FigureCaptions map[string]string
	Resamples      int
	Seed           uint64
	Level          float64
	Notes          []string
	// rows are the rows the report counted (the first of each duplicate), in file order: the HTML drill-down.
	rows []results.Row
}

// Build computes a report from rows (bad lines are only counted and listed).
func Build(rows []results.Row, bad []results.BadLine, o Options) (*Report, error) {
	if o.Resamples <= 0 {
		o.Resamples = stats.DefaultResamples
	}
	if o.Level <= 0 || o.Level >= 1 {
		o.Level = 0.95
	}
	if o.Alternative == "" {
		o.Alternative = AltObserved
	}
	if o.Alternative != AltObserved && o.Alternative != AltAnchor {
		return nil, fmt.Errorf("report: alternative %q: want %q or %q", o.Alternative, AltObserved, AltAnchor)
	}
	if len(o.Features) == 0 {
		o.Features = DefaultFeatures
	}
	r := &Report{Title: o.Title, Source: o.Source, Bad: bad, Alternative: o.Alternative, Resamples: o.Resamples,
		Seed: o.Seed, Level: o.Level}
	g := group(rows, o.Order)
	r.Rows, r.Duplicates, r.Instances = g.rows, g.duplicates, len(g.instances)
	r.rows = g.kept
	if r.Duplicates > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d duplicate rows (same instance, method and model) were ignored; the first of each was kept.", r.Duplicates))
	}
	boot := func(label string) stats.Bootstrap {
		return stats.Bootstrap{Resamples: o.Resamples, Seed: stats.SeedFor(o.Seed, label)}
	}
	for _, k := range g.keys {
		r.Methods = append(r.Methods, methodStats(k, g.rows_[k], boot(k.Method+"\x00"+k.Model), o.Level))
	}
	assignBudgets(r.Methods, g)
	for _, m := range r.Methods {
		if m.N < r.Instances {
			r.Notes = append(r.Notes, fmt.Sprintf("%s has rows for %d of the %d issues in the file (partial run).",
				label(m.Method, m.Model, len(g.models)), m.N, r.Instances))
		}
		if len(m.Served) > 0 {
			var served []string
			total := 0
			for _, name := range slices.Sorted(maps.Keys(m.Served)) {
				served = append(served, fmt.Sprintf("%s (%d)", name, m.Served[name]))
				total += m.Served[name]
			}
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d of its %d rows were answered by another model than the "+
				"spec's %s, as the endpoint named it: %s.", label(m.Method, m.Model, len(g.models)), total, m.N,
				m.Model, strings.Join(served, ", ")))
		}
	}
	if err := r.compare(g, o, boot); err != nil {
		return nil, err
	}
	for _, ab := range o.Pairs {
		for _, m := range ab {
			if !slices.ContainsFunc(g.keys, func(k results.Key) bool { return k.Method == m }) {
				return nil, fmt.Errorf("report: pair %s,%s: method %q has no rows", ab[0], ab[1], m)
			}
		}
	}
	r.disagreements(rows, g, o.Pairs)
	r.budget(g, boot)
	r.BudgetFits = budgetFits(g)
	if r.Samples = sampleStats(g, boot, o.Level); len(r.Samples) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%v draw several patch samples per issue: their n and resolved %% "+
			"count every sample's row, so their resolve rate is the per-issue mean; their paired comparisons and "+
			"disagreements pair per-issue means, with the exact sign test in place of McNemar's (see Paired "+
			"comparisons and Repeated samples).", sampledMethods(r.Samples)))
	}
	r.Regressions = regressions(g, o)
	r.Checks = checkPredictions(g, o.Predictions)
	return r, nil
}

func label(method, model string, models int) string {
	if models > 1 {
		return method + " (" + model + ")"
	}
	return method
}

// grouped holds the rows by (method, model) in report order.
type grouped struct {
	keys       []results.Key // Method and Model only
	rows_      map[results.Key][]results.Row
	models     []string
	instances  map[string]bool
	rows       int
	duplicates int
	kept       []results.Row
}

func group(rows []results.Row, order []results.Key) grouped {
	g := grouped{rows_: map[results.Key][]results.Row{}, instances: map[string]bool{}}
	seen := map[results.Key]bool{}
	var appear []results.Key
	for _, row := range rows {
		id := row.Key()
		if seen[id] {
			g.duplicates++
			continue
		}
		seen[id] = true
		g.rows++
		g.kept = append(g.kept, row)
		g.instances[id.Instance] = true
		k := results.Key{Method: id.Method, Model: id.Model}
		if _, ok := g.rows_[k]; !ok {
			appear = append(appear, k)
		}
		g.rows_[k] = append(g.rows_[k], row)
	}
	placed := map[results.Key]bool{}
	for _, k := range order {
		k = results.Key{Method: k.Method, Model: k.Model}
		if _, ok := g.rows_[k]; ok && !placed[k] {
			g.keys = append(g.keys, k)
			placed[k] = true
		}
	}
	for _, k := range appear {
		if !placed[k] {
			g.keys = append(g.keys, k)
		}
	}
	for _, k := range g.keys {
		if !slices.Contains(g.models, k.Model) {
			g.models = append(g.models, k.Model)
		}
	}
	return g
}

// resolved reports whether a row's patch resolved its issue: the outcome every comparison counts.
func resolved(r results.Row) bool {
	v, _ := graded(r)
	return v
}

// graded returns a row's outcome, and whether it has one (false while its patch is not graded, or its grade failed).
func graded(r results.Row) (resolved, ok bool) { return r.Bool(specs.Resolved.Name) }

// Stat returns the method's statistic of field f of the kind stat (its MethodColumns column); missing when the
// table has no such column.
func (m MethodStats) Stat(f specs.AnyField, stat specs.Stat) results.Value {
	for i, c := range MethodColumns {
		if c.Field.Name == f.Declaration().Name && c.Stat == stat && i < len(m.Stats) {
			return m.Stats[i]
		}
	}
	return results.Value{}
}

// columnStat is a column's statistic over rows: results.StatOf's, and the median, which results leaves to this
// package (it does not link results/stats).
func columnStat(c specs.FieldColumn, rows []results.Row) results.Value {
	if c.Stat != specs.Median {
		return results.StatOf(c, rows)
	}
	if xs := results.Carried(rows, c.Field); len(xs) > 0 {
		return some(stats.Median(xs))
	}
	return results.Value{}
}

func mean(xs []float64) results.Value {
	if len(xs) == 0 {
		return results.Value{}
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return some(s / float64(len(xs)))
}

func methodStats(k results.Key, rows []results.Row, boot stats.Bootstrap, level float64) MethodStats {
	m := MethodStats{Method: k.Method, Model: k.Model, N: len(rows), Errored: map[errkind.Class]int{},
		Served: map[string]int{}}
	for _, r := range rows {
		switch {
		case r.String(results.FieldError) != "":
			m.Errors++
			m.Errored[results.ErrorClass(r)]++
		case resolved(r):
			m.CleanResolved++
		default:
			m.CleanUnresolved++
		}
		if s := r.String(specs.ModelServed.Name); s != "" {
			m.Served[s]++
		}
		if resolved(r) {
			m.Resolved++
		}
	}
	m.ResolvedPct = 100 * float64(m.Resolved) / float64(m.N)
	// The interval resamples issues, each with all its samples: a method of k samples has k rows per issue, which
	// are not k independent issues. One sample per issue: its outcomes, in row order.
	order, issues := issueSamples(rows, nil)
	perIssue := make([]float64, len(order))
	for i, inst := range order {
		perIssue[i] = issues[inst].Mean()
	}
	ci := boot.MeanCI(perIssue, level)
	m.CI = stats.Interval{Lo: 100 * ci.Lo, Hi: 100 * ci.Hi}
	for _, c := range MethodColumns {
		m.Stats = append(m.Stats, columnStat(c, rows))
	}
	return m
}

var multiplierName = regexp.MustCompile(`^(.+)@([0-9]*\.?[0-9]+)x$`)

// assignBudgets finds each method's budget multiplier: from the rows' budget_multiplier when they all agree, else
// from a NAME@MULTx name. A method whose name is the base of another's multiplied name runs at 1x.
func assignBudgets(ms []MethodStats, g grouped) {
	bases := map[string]bool{}
	for i := range ms {
		m := &ms[i]
		m.Base = m.Method
		if sub := multiplierName.FindStringSubmatch(m.Method); sub != nil {
			m.Base = sub[1]
			if v, err := strconv.ParseFloat(sub[2], 64); err == nil && v > 0 {
				m.Multiplier = some(v)
			}
		}
		var vals []float64
		for _, r := range g.rows_[results.Key{Method: m.Method, Model: m.Model}] {
			if v, ok := r.Float(specs.BudgetMultiplier.Name); ok {
				vals = append(vals, v)
			}
		}
		if len(vals) > 0 && slices.Min(vals) == slices.Max(vals) && vals[0] > 0 {
			m.Multiplier = some(vals[0])
			// baselines.fitted names a variant METHOD_x0_5 (the multiplier with "_" for "."): its base is METHOD.
			suffix := "_x" + strings.ReplaceAll(strconv.FormatFloat(vals[0], 'g', -1, 64), ".", "_")
			if base, ok := strings.CutSuffix(m.Method, suffix); ok && base != "" {
				m.Base = base
			}
		}
		if m.Multiplier.OK {
			bases[m.Base] = true
		}
	}
	for i := range ms {
		if !ms[i].Multiplier.OK && bases[ms[i].Method] {
			ms[i].Multiplier = some(1)
		}
	}
}

func (r *Report) compare(g grouped, o Options, boot func(string) stats.Bootstrap) error {
	if len(g.keys) == 0 {
		return nil
	}
	r.Anchor, r.AnchorFrom = o.Anchor, o.AnchorFrom
	if r.Anchor == "" {
		r.Anchor, r.AnchorFrom = g.keys[0].Method, "the first method"
	}
	found := false
	for _, k := range g.keys {
		found = found || k.Method == r.Anchor
	}
	if !found {
		var names []string
		for _, k := range g.keys {
			if !slices.Contains(names, k.Method) {
				names = append(names, k.Method)
			}
		}
		return fmt.Errorf("report: anchor %q (%s) has no rows; methods: %v", r.Anchor, r.AnchorFrom, names)
	}
	r.Comparisons = r.comparisons(g, o, boot, nil)
	for _, rows := range g.rows_ {
		if slices.ContainsFunc(rows, notModelsError) {
			r.CleanComparisons = r.comparisons(g, o, func(label string) stats.Bootstrap {
				return boot("clean\x00" + label)
			}, notModelsError)
			break
		}
	}
	return nil
}

// hasSample reports whether a row is one of several patch samples (it carries a sample index).
func hasSample(r results.Row) bool {
	_, ok := r.Float(results.FieldSample)
	return ok
}

// issueSamples counts one method's rows by issue, in the order the issues first appear, leaving out the rows drop
// says (nil: none): each issue's patch samples, as the paired comparisons take them.
func issueSamples(rows []results.Row, drop func(results.Row) bool) ([]string, map[string]stats.SampleCounts) {
	var order []string
	by := map[string]stats.SampleCounts{}
	for _, row := range rows {
		if drop != nil && drop(row) {
			continue
		}
		inst := row.String(results.FieldInstance)
		s, seen := by[inst]
		if !seen {
			order = append(order, inst)
		}
		s.N++
		if resolved(row) {
			s.C++
		}
		by[inst] = s
	}
	return order, by
}

// notModelsError reports whether a row has an error that is not the model's own: the endpoint's, the
// configuration's, the machine's (errkind.ClassOf of its error_kind).
func notModelsError(r results.Row) bool {
	return r.String(results.FieldError) != "" && results.ErrorClass(r) != errkind.Model
}

// comparisons pairs every method with the anchor, per model, on the issues both have, leaving out the rows drop
// says (nil: none) and so the issues where either side keeps no row, with Holm's adjustment over the comparisons
// made. Each side of an issue is its per-issue mean over its samples: its one outcome for a method of one sample, so
// that a comparison of two such methods is McNemar's. Notes are added for the comparisons of every issue (drop nil)
// only.
func (r *Report) comparisons(g grouped, o Options, boot func(string) stats.Bootstrap,
	drop func(results.Row) bool) []Comparison {
	var out []Comparison
	sampled := map[results.Key]bool{}
	for k, rows := range g.rows_ {
		sampled[k] = slices.ContainsFunc(rows, hasSample)
	}
	note := func(s string) {
		if drop == nil {
			r.Notes = append(r.Notes, s)
		}
	}
	for _, model := range g.models {
		anchorRows := g.rows_[results.Key{Method: r.Anchor, Model: model}]
		if len(anchorRows) == 0 {
			note(fmt.Sprintf("model %s has no rows of the anchor %s: no comparisons for it.", model, r.Anchor))
			continue
		}
		_, anchorIssues := issueSamples(anchorRows, drop)
		for _, k := range g.keys {
			if k.Model != model || k.Method == r.Anchor {
				continue
			}
			c := Comparison{Model: model, Anchor: r.Anchor, Method: k.Method,
				PerIssueMeans: sampled[results.Key{Method: r.Anchor, Model: model}] || sampled[k]}
			order, issues := issueSamples(g.rows_[k], drop)
			var paired []stats.PairedIssue
			for _, inst := range order {
				if a, ok := anchorIssues[inst]; ok {
					paired = append(paired, stats.PairedIssue{A: a, B: issues[inst]})
				}
			}
			c.Paired = len(paired)
			if c.Paired == 0 {
				c.P, c.PHolm = math.NaN(), math.NaN()
				note(fmt.Sprintf("%s and the anchor share no issue: not compared.", label(k.Method, model, len(g.models))))
				out = append(out, c)
				continue
			}
			pm := boot("pair\x00"+r.Anchor+"\x00"+k.Method+"\x00"+model).PairedPerIssueMeans(paired, o.Level)
			c.AnchorPct, c.MethodPct = 100*pm.A, 100*pm.B
			c.DiffPts = c.AnchorPct - c.MethodPct
			c.DiffCI = stats.Interval{Lo: 100 * pm.CI.Lo, Hi: 100 * pm.CI.Hi}
			c.OnlyAnchor, c.OnlyMethod = pm.AHigher, pm.BHigher
			switch {
			case c.OnlyAnchor > c.OnlyMethod:
				c.Better = r.Anchor
			case c.OnlyMethod > c.OnlyAnchor:
				c.Better = k.Method
			}
			switch {
			case o.Alternative == AltAnchor || c.Better == r.Anchor:
				c.Tested, c.P = r.Anchor, stats.SignTest(c.OnlyAnchor, c.OnlyMethod)
			case c.Better == k.Method:
				c.Tested, c.P = k.Method, stats.SignTest(c.OnlyMethod, c.OnlyAnchor)
			default:
				// A tie under the observed alternative points nowhere; p is the same for either side.
				c.P = stats.SignTest(c.OnlyAnchor, c.OnlyMethod)
			}
			out = append(out, c)
		}
	}
	ps := make([]float64, len(out))
	for i, c := range out {
		ps[i] = c.P
	}
	for i, adj := range stats.Holm(ps) {
		out[i].PHolm = adj
		out[i].Stars = stats.Stars(adj)
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// budget lists the budget points of every base method (per model) that ran at two or more multipliers: a single
// point per method (every fitted method carries 1x) is no sweep.
func (r *Report) budget(g grouped, boot func(string) stats.Bootstrap) {
	type series struct{ base, model string }
	mults := map[series][]float64{}
	for _, m := range r.Methods {
		if s := (series{m.Base, m.Model}); m.Multiplier.OK && !slices.Contains(mults[s], m.Multiplier.V) {
			mults[s] = append(mults[s], m.Multiplier.V)
		}
	}
	for _, m := range r.Methods {
		if !m.Multiplier.OK || len(mults[series{m.Base, m.Model}]) < 2 {
			continue
		}
		r.Budget = append(r.Budget, BudgetPoint{Base: m.Base, Model: m.Model, Method: m.Method,
			Multiplier: m.Multiplier.V, N: m.N, ResolvedPct: m.ResolvedPct, CI: m.CI})
	}
	slices.SortStableFunc(r.Budget, func(a, b BudgetPoint) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Base, b.Base), cmp.Compare(a.Multiplier, b.Multiplier))
	})
}
