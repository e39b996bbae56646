package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"ctxlab/activities/api/errkind"
	"ctxlab/results"
)

// cell is one table cell: how Markdown and LaTeX show it, and what CSV stores (full precision; empty when missing).
type cell struct{ show, raw string }

// Table is one of the report's tables, rendered to Markdown, CSV and LaTeX from the same cells.
type Table struct {
	// Name is the file stem under tables/; Caption heads it.
	Name, Caption string
	Head          []string
	rows          [][]cell
}

const missing = "–"

func txt(s string) cell { return cell{s, s} }
func num(v float64, format string) cell {
	if math.IsNaN(v) {
		return cell{missing, ""}
	}
	return cell{fmt.Sprintf(format, v), strconv.FormatFloat(v, 'g', 8, 64)}
}
func integer(n int) cell { s := strconv.Itoa(n); return cell{s, s} }
func opt(v results.Value, format string) cell {
	if !v.OK {
		return cell{missing, ""}
	}
	return num(v.V, format)
}
func interval(lo, hi float64) cell {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return cell{missing, ""}
	}
	return cell{fmt.Sprintf("[%.1f, %.1f]", lo, hi), fmt.Sprintf("%s;%s", strconv.FormatFloat(lo, 'g', 8, 64),
		strconv.FormatFloat(hi, 'g', 8, 64))}
}

// pval shows p with three decimals, or in scientific notation below 0.001 so small values stay checkable.
func pval(p float64) cell {
	switch {
	case math.IsNaN(p):
		return cell{missing, ""}
	case p < 0.001:
		return cell{fmt.Sprintf("%.2g", p), strconv.FormatFloat(p, 'g', 8, 64)}
	}
	return cell{fmt.Sprintf("%.3f", p), strconv.FormatFloat(p, 'g', 8, 64)}
}

// Tables returns the report's tables in the order report.md shows them; empty ones are left out.
func (r *Report) Tables() []Table {
	ts := []Table{r.methodTable(), r.failureTable()}
	if len(r.Comparisons) > 0 {
		ts = append(ts, comparisonTable("comparisons", fmt.Sprintf("Paired comparisons against the anchor %s: "+
			"%s, Holm-adjusted over %d comparisons", r.Anchor, r.testName(), len(r.Comparisons)), r.Comparisons))
	}
	if len(r.CleanComparisons) > 0 {
		ts = append(ts, comparisonTable("comparisons_clean", fmt.Sprintf("Paired comparisons against the anchor "+
			"%s on the issues where neither row has an error that is not the model's: %s, "+
			"Holm-adjusted over these %d comparisons", r.Anchor, r.testName(), len(r.CleanComparisons)),
			r.CleanComparisons))
	}
	if len(r.Pairs) > 0 {
		if dt := r.disagreementTable(); len(dt.rows) > 0 {
			ts = append(ts, dt)
		}
	}
	if len(r.Budget) > 0 {
		ts = append(ts, r.budgetTable())
	}
	if len(r.BudgetFits) > 0 {
		ts = append(ts, r.budgetFitTable())
	}
	if rt, cal := r.regressionTables(); len(rt.rows) > 0 {
		ts = append(ts, rt, cal)
	}
	if len(r.Checks) > 0 {
		ts = append(ts, r.predictionTable())
	}
	if len(r.Samples) > 0 {
		ts = append(ts, r.sampleTable())
	}
	return ts
}

// methodTable is the per-method table: resolve rate with its interval and the context metrics.
func (r *Report) methodTable() Table {
	// The multiplier column only matters when some method ran at several budgets.
	hasMult := len(r.Budget) > 0
	mt := Table{Name: "methods", Caption: fmt.Sprintf("Per method: resolve rate with %.0f%% issue-level bootstrap interval (%d resamples) and context metrics", 100*r.Level, r.Resamples),
		Head: []string{"method", "model", "n", "errors", "resolved %", "95% CI"}}
	for _, c := range MethodColumns {
		mt.Head = append(mt.Head, c.Heading())
	}
	if hasMult {
		mt.Head = append(mt.Head, "budget x")
	}
	for _, m := range r.Methods {
		row := []cell{txt(m.Method), txt(m.Model), integer(m.N), integer(m.Errors), num(m.ResolvedPct, "%.1f"),
			interval(m.CI.Lo, m.CI.Hi)}
		for i, c := range MethodColumns {
			row = append(row, opt(m.Stats[i], c.Format))
		}
		if hasMult {
			row = append(row, opt(m.Multiplier, "%g"))
		}
		mt.rows = append(mt.rows, row)
	}
	return mt
}

// disagreementTable lists, per pair, the issues exactly one of its methods resolves.
func (r *Report) disagreementTable() Table {
	dt := Table{Name: "disagreements", Caption: "Disagreements: the issues exactly one method of a pair resolves (the discordant pairs of its McNemar test)",
		Head: []string{"model", "method A", "method B", "instance", "resolved by"}}
	for _, c := range PairColumns {
		dt.Head = append(dt.Head, c.Heading()+" A", c.Heading()+" B")
	}
	for _, p := range r.Pairs {
		for _, d := range append(slices.Clip(p.OnlyA), p.OnlyB...) {
			row := []cell{txt(p.Model), txt(p.A), txt(p.B), txt(d.Instance), txt(d.ResolvedBy)}
			for i, c := range PairColumns {
				row = append(row, opt(d.A[i], c.Format), opt(d.B[i], c.Format))
			}
			dt.rows = append(dt.rows, row)
		}
	}
	return dt
}

// budgetTable is the resolve rate per budget multiplier of the methods that ran at several budgets.
func (r *Report) budgetTable() Table {
	bt := Table{Name: "budget", Caption: "Resolve rate by budget multiplier (multiples of the anchor's per-issue budget)",
		Head: []string{"model", "base method", "method", "budget x", "n", "resolved %", "95% CI"}}
	for _, b := range r.Budget {
		bt.rows = append(bt.rows, []cell{txt(b.Model), txt(b.Base), txt(b.Method), num(b.Multiplier, "%g"),
			integer(b.N), num(b.ResolvedPct, "%.1f"), interval(b.CI.Lo, b.CI.Hi)})
	}
	return bt
}

// regressionTables are the regressions' coefficients and their fit per method.
func (r *Report) regressionTables() (coefs, calibration Table) {
	rt := Table{Name: "regression", Caption: "Logistic regression of resolve on context features (Firth), Wald tests",
		Head: []string{"model", "term", "coef", "SE", "z", "p", "odds ratio per unit"}}
	cal := Table{Name: "calibration", Caption: "Regression fit per method: observed vs mean predicted resolve rate",
		Head: []string{"model", "method", "fitted on", "n", "observed %", "predicted %"}}
	for _, g := range r.Regressions {
		for _, c := range g.Coefs {
			rt.rows = append(rt.rows, []cell{txt(g.Model), txt(c.Name), num(c.Estimate, "%.3f"), num(c.SE, "%.3f"),
				num(c.Z, "%.2f"), pval(c.P), num(c.OddsRatioPerUnit, "%.3g")})
		}
		for _, c := range g.Calibration {
			fitted := "no"
			if c.Fitted {
				fitted = "yes"
			}
			cal.rows = append(cal.rows, []cell{txt(g.Model), txt(c.Method), txt(fitted), integer(c.N),
				num(c.ObservedPct, "%.1f"), num(c.PredictedPct, "%.1f")})
		}
	}
	return rt, cal
}

// predictionTable checks each frozen prediction against the outcomes graded so far.
func (r *Report) predictionTable() Table {
	pt := Table{Name: "predictions", Caption: "Frozen predictions against outcomes",
		Head: []string{"method", "model", "frozen at", "fit on", "issues", "graded", "predicted %", "95% PI",
			"observed %", "obs - pred", "inside PI", "file"}}
	for _, c := range r.Checks {
		obs, diff, inside := txt(missing), txt(missing), txt("awaiting outcomes")
		if c.Graded > 0 {
			obs, diff = num(c.ObservedPct, "%.1f"), num(c.DiffPts, "%+.1f")
			inside = txt(map[bool]string{true: "yes", false: "no"}[c.Inside])
		}
		pt.rows = append(pt.rows, []cell{txt(c.Method), txt(c.Model), txt(c.FrozenAt),
			txt(strings.Join(c.FitMethods, " ")), integer(c.Issues), integer(c.Graded), num(c.PredictedPct, "%.1f"),
			interval(c.Interval.Lo, c.Interval.Hi), obs, diff, inside, txt(filepath.Base(c.File))})
	}
	return pt
}

// failureTable counts each method's rows by outcome: resolved, unresolved (both without an error) and errored, by
// the class of the error (whose failure it is); a class no row has gets no column.
func (r *Report) failureTable() Table {
	var classes []errkind.Class
	for _, m := range r.Methods {
		for c := range m.Errored {
			if !slices.Contains(classes, c) {
				classes = append(classes, c)
			}
		}
	}
	slices.Sort(classes)
	t := Table{Name: "failures", Caption: "Per method: rows resolved, unresolved and errored, by whose failure the " +
		"error is", Head: []string{"method", "model", "n", "resolved", "unresolved", "errored"}}
	for _, c := range classes {
		t.Head = append(t.Head, "errored: "+string(c))
	}
	for _, m := range r.Methods {
		row := []cell{txt(m.Method), txt(m.Model), integer(m.N), integer(m.CleanResolved), integer(m.CleanUnresolved),
			integer(m.Errors)}
		for _, c := range classes {
			row = append(row, integer(m.Errored[c]))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// comparisonTable renders paired comparisons.
func comparisonTable(name, caption string, cs []Comparison) Table {
	ct := Table{Name: name, Caption: caption,
		Head: []string{"model", "anchor", "method", "paired n", "anchor %", "method %", "diff pts", "95% CI",
			"only anchor", "only method", "better", "one-sided H1", "p one-sided", "p Holm", "sig"}}
	for _, c := range cs {
		if c.Paired == 0 {
			ct.rows = append(ct.rows, []cell{txt(c.Model), txt(c.Anchor), txt(c.Method), integer(0), txt(missing),
				txt(missing), txt(missing), txt(missing), integer(0), integer(0), txt(missing), txt(missing), pval(math.NaN()),
				pval(math.NaN()), txt("")})
			continue
		}
		hyp := txt(c.Hypothesis())
		if c.Tested == "" {
			hyp = cell{missing, ""}
		}
		ct.rows = append(ct.rows, []cell{txt(c.Model), txt(c.Anchor), txt(c.Method), integer(c.Paired),
			num(c.AnchorPct, "%.1f"), num(c.MethodPct, "%.1f"), num(c.DiffPts, "%+.1f"), interval(c.DiffCI.Lo, c.DiffCI.Hi),
			integer(c.OnlyAnchor), integer(c.OnlyMethod), txt(c.BetterText()), hyp, pval(c.P),
			pval(c.PHolm), txt(c.Stars)})
	}
	return ct
}

// NoDifference is what a comparison claims when the discordant counts tie.
const NoDifference = "no difference"

// BetterText is the observed better side, or NoDifference on a tie: a direction is only claimed when the
// discordant counts differ.
func (c Comparison) BetterText() string {
	if c.Better == "" {
		return NoDifference
	}
	return c.Better
}

// Hypothesis is the one-sided alternative the p-value tests, as "A > B" (A resolves more).
func (c Comparison) Hypothesis() string {
	if c.Tested == "" {
		return ""
	}
	other := c.Method
	if c.Tested == c.Method {
		other = c.Anchor
	}
	return c.Tested + " > " + other
}

// Markdown renders the table as a GitHub table.
func (t Table) Markdown() string {
	var b strings.Builder
	head := make([]string, len(t.Head))
	for i, h := range t.Head {
		head[i] = mdText(h)
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for range t.Head {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, row := range t.rows {
		b.WriteString("|")
		for _, c := range row {
			b.WriteString(" " + strings.ReplaceAll(mdText(c.show), "|", "\\|") + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// CSV renders the table with full-precision numbers; missing values are empty cells, intervals "lo;hi".
func (t Table) CSV() string {
	var b strings.Builder
	line := func(fields []string) {
		for i, f := range fields {
			if i > 0 {
				b.WriteByte(',')
			}
			if strings.ContainsAny(f, ",\"\n") {
				f = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
			}
			b.WriteString(f)
		}
		b.WriteByte('\n')
	}
	line(t.Head)
	for _, row := range t.rows {
		raw := make([]string, len(row))
		for i, c := range row {
			raw[i] = c.raw
		}
		line(raw)
	}
	return b.String()
}

// LaTeX renders the table as a booktabs table.
func (t Table) LaTeX() string {
	var b strings.Builder
	b.WriteString("% generated by ctxlab report from the results rows; needs \\usepackage{booktabs}\n")
	b.WriteString("\\begin{table}[t]\n\\centering\n\\small\n")
	fmt.Fprintf(&b, "\\caption{%s}\n\\label{tab:%s}\n", texEscape(t.Caption), t.Name)
	cols := ""
	for _, h := range t.Head {
		if textColumns[h] {
			cols += "l"
		} else {
			cols += "r"
		}
	}
	fmt.Fprintf(&b, "\\begin{tabular}{%s}\n\\toprule\n", cols)
	head := make([]string, len(t.Head))
	for i, h := range t.Head {
		head[i] = texEscape(h)
	}
	b.WriteString(strings.Join(head, " & ") + " \\\\\n\\midrule\n")
	for _, row := range t.rows {
		cells := make([]string, len(row))
		for i, c := range row {
			switch {
			case c.show == missing:
				cells[i] = "--"
			case t.Head[i] == "sig" && c.show != "":
				cells[i] = "$^{" + c.show + "}$"
			default:
				cells[i] = texEscape(c.show)
			}
		}
		b.WriteString(strings.Join(cells, " & ") + " \\\\\n")
	}
	b.WriteString("\\bottomrule\n\\end{tabular}\n\\end{table}\n")
	return b.String()
}

var textColumns = map[string]bool{"method": true, "model": true, "anchor": true, "base method": true, "term": true,
	"fitted on": true, "method A": true, "method B": true, "instance": true, "resolved by": true, "better": true, "one-sided H1": true, "frozen at": true, "fit on": true, "inside PI": true, "file": true, "sig": true, "tokenizer": true, "why outside": true}

var texReplacer = strings.NewReplacer(`\`, `\textbackslash{}`, `_`, `\_`, `%`, `\%`, `&`, `\&`, `#`, `\#`,
	`$`, `\$`, `{`, `\{`, `}`, `\}`, `~`, `\textasciitilde{}`, `^`, `\textasciicircum{}`, "–", "--")

func texEscape(s string) string { return texReplacer.Replace(s) }
