package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"ctxlab/runfolder"
)

// Markdown renders report.md.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdText(r.Title))
	r.mdIntro(&b)
	s := mdSections{b: &b, byName: map[string]Table{}}
	for _, t := range r.Tables() {
		s.byName[t.Name] = t
	}
	r.mdResultSections(s)
	r.mdComparisonSections(s)
	r.mdRegressionSections(s)
	r.mdPredictionSection(s)
	s.section("Repeated samples", "samples", "Methods that draw k patch samples per issue (samples: k in the spec). "+
		"mean resolved %: each issue's share of resolved samples, averaged over issues (pass@1). pass@k: 1 − "+
		"C(n−c, k)/C(n, k) per issue (n samples, c resolved), averaged over the issues with all k samples (pass@k "+
		"issues); with every sample present it equals any %. majority %: issues a strict majority of their samples "+
		"resolve (a tie does not). any %: issues at least one sample resolves. flip %: issues, among those with two "+
		"samples or more, whose samples disagree; its interval resamples issues with all their samples.")
	r.mdFigures(&b)
	b.WriteString(r.costSplitMarkdown())
	r.mdDefinitions(&b)
	return b.String()
}

// mdIntro writes the paragraph that says what the report was computed from, and the report's notes.
func (r *Report) mdIntro(b *strings.Builder) {
	nm := map[string]bool{}
	for _, m := range r.Methods {
		nm[m.Method] = true
	}
	fmt.Fprintf(b, "Computed by `starter report` from %s: %d rows, %d issues, %d methods, %d method × model arms.",
		mdCode(r.Source), r.Rows, r.Instances, len(nm), len(r.Methods))
	if len(r.Bad) > 0 {
		var lines []string
		for _, l := range r.Bad {
			lines = append(lines, fmt.Sprintf("line %d (%s)", l.Line, mdText(fmt.Sprint(l.Err))))
		}
		fmt.Fprintf(b, " %d lines are not rows and were skipped: %s.", len(r.Bad), strings.Join(lines, "; "))
	}
	errs := 0
	for _, m := range r.Methods {
		errs += m.Errors
	}
	if errs > 0 {
		fmt.Fprintf(b, " %d rows carry an error; they are counted, as not resolved (column errors).", errs)
	}
	b.WriteString("\n\n")
	for _, n := range r.Notes {
		b.WriteString("- " + mdText(n) + "\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
}

// mdSections writes report.md's table sections by table name; a section whose table the report lacks is left out.
type mdSections struct {
	b      *strings.Builder
	byName map[string]Table
}

// section writes the table name under title with its caption, the text after it (if any) and its file links.
func (s mdSections) section(title, name, after string) {
	t, ok := s.byName[name]
	if !ok {
		return
	}
	fmt.Fprintf(s.b, "## %s\n\n%s\n\n%s", title, mdText(t.Caption)+".", t.Markdown())
	if after != "" {
		s.b.WriteString("\n" + after + "\n")
	}
	fmt.Fprintf(s.b, "\nAlso as [CSV](tables/%s.csv) and [LaTeX](tables/%s.tex).\n\n", name, name)
}

// mdResultSections writes the per-method and failure tables and the paired comparisons.
func (r *Report) mdResultSections(s mdSections) {
	s.section("Per method", "methods", "n: issues with a row. resolved % and applied %: share of the n rows (a row with "+
		"an error counts as neither). mean rho, mean epsilon, gold-line share, tokens, cost, loc F1, the line-level "+
		"truth (line, block recall and precision, file precision): over the rows "+
		"that carry the field. no gold shown %: rows with rho = 0 among rows with rho. fallback %: among rows that "+
		"carry the field. – : no row carries the field.")
	s.section("Failures per method", "failures", "resolved and unresolved: rows without an error. errored: rows "+
		"with one, then by whose failure it is (the class of the row's error_kind): the model's own (its answer, a "+
		"prompt too long for it) counts against the method, the others' (the endpoint's, the configuration's, the "+
		"machine's) do not, and the comparisons on clean issues below leave them out.")
	alt := "the alternative points the way the data do (the side with more discordant wins), so p is half the " +
		"two-sided exact p; on a tie it points nowhere (–) and p, the same for either side, is at least 0.5"
	if r.Alternative == AltAnchor {
		alt = "the alternative is always \"the anchor resolves more\", fixed before looking at the data"
	}
	s.section("Paired comparisons", "comparisons", fmt.Sprintf("Anchor: %s (%s). Pairs are the issues both methods "+
		"have. only anchor / only method: discordant pairs. better: the side with more discordant wins; %s when "+
		"the counts are equal (difference 0: no direction is claimed). The test is one-sided: one-sided H1 is the "+
		"alternative tested (A > B: A resolves more); %s. p one-sided: exact McNemar, P(X ≥ wins of the H1 side) "+
		"with X ~ Binomial(discordant, 1/2). p Holm: Holm's step-down adjustment over all comparisons of this report. "+
		"sig: *** p < 0.001, ** p < 0.01, * p < 0.05 (Holm-adjusted); blank: not significant. diff pts: anchor − "+
		"method on the paired issues, with its paired bootstrap interval.%s", mdText(r.Anchor), mdText(r.AnchorFrom),
		NoDifference, mdText(alt), mdText(r.perIssueMeansText())))
}

// mdComparisonSections writes the comparisons on clean issues, the disagreements and the two budget sections.
func (r *Report) mdComparisonSections(s mdSections) {
	if len(r.Comparisons) > 0 && len(r.CleanComparisons) == 0 {
		s.b.WriteString("No row has an error that is not the model's: the comparisons above are also those on the " +
			"issues where neither arm has one.\n\n")
	}
	s.section("Paired comparisons on clean issues", "comparisons_clean", "The comparisons above, on the issues where "+
		"neither method's row has an error that is not the model's (the endpoint's, the configuration's, the "+
		"machine's): whether such failures moved a result. Holm's adjustment runs over these comparisons.")
	var counts []string
	for _, p := range r.Pairs {
		counts = append(counts, mdText(fmt.Sprintf("%s vs %s: %d only %s, %d only %s", label(p.A, p.Model, r.models()),
			p.B, len(p.OnlyA), p.A, len(p.OnlyB), p.B)))
	}
	s.section("Disagreements", "disagreements", "One row per issue that exactly one method of a pair resolves, "+
		"with both sides' rho, epsilon and context tokens: the discordant pairs behind each McNemar count ("+
		strings.Join(counts, "; ")+"). Pairs where both methods agree on every issue have no rows."+
		mdText(r.perIssueMeansText()))
	s.section("Budget sweep", "budget", "Methods that ran at two or more budgets: the multiplier is the row field "+
		"budget_multiplier or a name METHOD@0.5x; variants named METHOD_x0_5 (as the fitted baselines are) and "+
		"METHOD@0.5x belong to METHOD, which is 1x. A method at a single budget is no sweep and is left out.")
	s.section("Budget truth", "budget_fit", "Every row fitted to a budget (budget_tokens: the multiplier times the "+
		"anchor's context tokens on the issue) against the tokens its context measured (context_tokens), counted in "+
		"the tokenizer the row names: the model's own (a tiktoken encoding, or endpoint:MODEL, the model server's "+
		"/tokenize) unless the spec pinned one tokenizer for every model. error: (context − budget) / budget. "+
		"Reasons outside ±2%: not enough text (all the ranked text is under the budget), issue alone too long (the "+
		"issue text is over it), knob too coarse (neighbouring knob values straddle the band), out of evaluations, "+
		"measured off the fit (the fit said it was reached).")
}

// mdRegressionSections writes the logistic regressions with a note per model, or the notes alone when no fit has
// a table.
func (r *Report) mdRegressionSections(s mdSections) {
	var regNotes []string
	for _, g := range r.Regressions {
		note := fmt.Sprintf("%s: fitted on %s (%d rows", g.Model, strings.Join(g.Methods, ", "), g.N)
		if g.Skipped > 0 {
			note += fmt.Sprintf("; %d rows lacked a feature and were left out", g.Skipped)
		}
		note += ")"
		if len(g.Features) > 0 {
			note += "; features " + strings.Join(g.Features, ", ")
		}
		if len(g.Dropped) > 0 {
			note += "; left out: " + strings.Join(g.Dropped, "; ")
		}
		if g.Err != "" {
			note += "; no fit: " + g.Err
		} else if !g.Converged {
			note += "; did not converge"
		}
		regNotes = append(regNotes, "- "+mdText(note)+".")
	}
	if _, ok := s.byName["regression"]; ok {
		s.section("Logistic regression of resolve", "regression", strings.Join(regNotes, "\n")+"\n\nFirth's "+
			"penalised likelihood keeps coefficients finite when a feature separates resolved from unresolved "+
			"rows. log_tokens = log(1 + context_tokens).")
		s.section("Regression fit per method", "calibration", "")
	} else if len(regNotes) > 0 {
		s.b.WriteString("## Logistic regression of resolve\n\n" + strings.Join(regNotes, "\n") + "\n\n")
	}
}

// mdPredictionSection writes the frozen predictions' check, saying which were frozen after outcomes were seen.
func (r *Report) mdPredictionSection(s mdSections) {
	var seen []string
	for _, c := range r.Checks {
		if c.OutcomesSeen > 0 {
			seen = append(seen, mdText(fmt.Sprintf("%s (%s) was frozen when %d of its rows already had outcomes: "+
				"not a blind prediction.", c.Method, c.Model, c.OutcomesSeen)))
		}
	}
	s.section("Frozen predictions", "predictions", "Each file is named by the SHA-256 of its bytes and was checked "+
		"against it. predicted % and its 95% prediction interval (coefficient uncertainty from issue-level "+
		"bootstrap refits and the outcomes' own binomial noise) are recomputed from the frozen file on the issues "+
		"graded so far. "+strings.Join(seen, " "))
}

// mdFigures writes the PNG figures with their captions.
func (r *Report) mdFigures(b *strings.Builder) {
	if len(r.Figures) > 0 {
		b.WriteString("## Figures\n\n")
		for _, f := range r.Figures {
			if strings.HasSuffix(f, ".png") {
				stem := strings.TrimSuffix(filepath.Base(f), ".png")
				fmt.Fprintf(b, "![%s](%s)\n\n", mdText(stem), mdDest(filepath.ToSlash(f)))
				if c := r.FigureCaptions[stem]; c != "" {
					b.WriteString(mdText(c) + "\n\n")
				}
			}
		}
		b.WriteString("Each figure is also an SVG next to its PNG.\n\n")
	}
}

// mdDefinitions writes the closing definitions of the report's measures and intervals.
func (r *Report) mdDefinitions(b *strings.Builder) {
	fmt.Fprintf(b, "## Definitions\n\nrho: share of the gold patch's files shown in the context. epsilon: share of "+
		"the context's lines found verbatim in the file they came from. gold-line share: share of context lines "+
		"that lie in gold files. line recall: share of the gold lines (the base lines the gold patch deletes or "+
		"replaces; for a pure insertion, the nearest non-blank line on each side) shown verbatim at their place; "+
		"line precision: share of the context's lines that are gold lines. block recall and precision: the same "+
		"with the lines of the functions or blocks enclosing the gold lines. file precision: share of the files "+
		"shown that the gold patch edits (file recall is rho). Intervals: %.0f%% percentile intervals from %d issue-level bootstrap resamples, "+
		"seed %d (the same seed gives the same report).\n", 100*r.Level, r.Resamples, r.Seed)
}

// mdText makes text from rows (instance, method and model names, notes built from them) plain text in Markdown,
// as html/template does in report.html: no tag can open ("<" and "&" become entities), a link's or an image's "]("
// and code spans' backticks are escaped, and a line break cannot end a table row or a list item.
func mdText(s string) string { return mdReplacer.Replace(s) }

var mdReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", "](", `\](`, "`", "\\`",
	"\r\n", `\n`, "\n", `\n`, "\r", `\n`)

// mdDest is a relative path as a Markdown link destination that any renderer reads as that path: bytes other than
// letters, digits and "-._~/" are percent-encoded, so a space, a parenthesis, "<", a line break or a ":" (which
// would start a scheme) cannot end the link or turn it into another one, and an ordinary path stays as it is
// (figures/resolve_ci.png). mdText is for text, not for destinations: its entities and backslashes are not
// decoded the same way in a destination by every renderer.
func mdDest(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// mdCode is s as a code span, fenced by more backticks than any run in s.
func mdCode(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + " " + s + " " + fence
}

// models counts the report's models.
func (r *Report) models() int {
	seen := map[string]bool{}
	for _, m := range r.Methods {
		seen[m.Model] = true
	}
	return len(seen)
}

// Write writes report.md into dir and every table as CSV and LaTeX under dir/tables, and returns the paths.
func (r *Report) Write(dir string) ([]string, error) {
	tdir := filepath.Join(dir, "tables")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	// Tables of sections this report no longer has (a prediction file removed) must not linger.
	for _, name := range []string{"methods", "failures", "comparisons", "comparisons_clean", "disagreements", "budget",
		"regression", "calibration", "predictions"} {
		for _, ext := range []string{".csv", ".tex"} {
			_ = os.Remove(filepath.Join(tdir, name+ext))
		}
	}
	var paths []string
	write := func(path, text string) error {
		if err := runfolder.WriteAtomic(path, []byte(text)); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		paths = append(paths, path)
		return nil
	}
	for _, t := range r.Tables() {
		if err := write(filepath.Join(tdir, t.Name+".csv"), t.CSV()); err != nil {
			return nil, err
		}
		if err := write(filepath.Join(tdir, t.Name+".tex"), t.LaTeX()); err != nil {
			return nil, err
		}
	}
	if err := write(filepath.Join(dir, "report.md"), r.Markdown()); err != nil {
		return nil, err
	}
	return paths, nil
}
