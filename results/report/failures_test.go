package report

import (
	"html"
	"regexp"
	"strings"
	"testing"

	"ctxlab/activities/api/errkind"
	"ctxlab/results"
	"ctxlab/specs"
)

// failureRows are two methods on six issues, worked out by hand:
//
//	i1: A resolved, B errored (rate_limit: the endpoint's)
//	i2: A errored (context_length: the model's own), B resolved
//	i3: A resolved, B errored (auth: the configuration's)
//	i4: both resolved; i5: neither; i6: A resolved, B not.
//
// As scored, A beats B on 3 discordant issues (i1 i3 i6) to 1 (i2); on the issues where neither row has an error
// that is not the model's (i2 i4 i5 i6), it is 1 (i6) to 1 (i2): no difference.
func failureRows() []results.Row {
	row := func(inst, method string, res bool, kind string) results.Row {
		r := results.Row{results.FieldInstance: inst, results.FieldMethod: method, results.FieldModel: "m",
			specs.Resolved.Name: res, results.FieldError: nil}
		if kind != "" {
			r[results.FieldError], r[results.FieldErrorKind], r[specs.Resolved.Name] = "step failed: "+kind, kind, nil
		}
		return r
	}
	return []results.Row{
		row("i1", "A", true, ""), row("i1", "B", false, "rate_limit"),
		row("i2", "A", false, "context_length"), row("i2", "B", true, ""),
		row("i3", "A", true, ""), row("i3", "B", false, "auth"),
		row("i4", "A", true, ""), row("i4", "B", true, ""),
		row("i5", "A", false, ""), row("i5", "B", false, ""),
		row("i6", "A", true, ""), row("i6", "B", false, ""),
	}
}

func TestReportKeepsFailuresApart(t *testing.T) {
	r, err := Build(failureRows(), nil, Options{Title: "failures", Source: "rows.jsonl", Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	endpoint, config, model := errkind.ClassOf("rate_limit"), errkind.ClassOf("auth"), errkind.ClassOf("context_length")
	if endpoint == model || config == model || endpoint == config {
		t.Fatalf("errkind classes rate_limit %s, auth %s, context_length %s: the test needs three", endpoint, config, model)
	}
	tables := map[string]Table{}
	for _, tb := range r.Tables() {
		tables[tb.Name] = tb
	}
	failures, ok := tables["failures"]
	if !ok {
		t.Fatalf("no failures table; tables %v", keys(tables))
	}
	// Columns: method model n resolved unresolved errored, then one per class, in sorted order.
	csv := failures.CSV()
	col := map[string]int{}
	for i, h := range failures.Head {
		col[h] = i
	}
	want := map[string]map[string]string{
		"A": {"n": "6", "resolved": "4", "unresolved": "1", "errored": "1", "errored: " + string(model): "1",
			"errored: " + string(endpoint): "0", "errored: " + string(config): "0"},
		"B": {"n": "6", "resolved": "2", "unresolved": "2", "errored": "2", "errored: " + string(model): "0",
			"errored: " + string(endpoint): "1", "errored: " + string(config): "1"},
	}
	for _, line := range strings.Split(strings.TrimSpace(csv), "\n")[1:] {
		cells := strings.Split(line, ",")
		for h, v := range want[cells[0]] {
			i, ok := col[h]
			if !ok {
				t.Fatalf("failures table has no column %q: %v", h, failures.Head)
			}
			if cells[i] != v {
				t.Errorf("method %s, %s: %s, want %s\n%s", cells[0], h, cells[i], v, csv)
			}
		}
	}

	if len(r.Comparisons) != 1 || len(r.CleanComparisons) != 1 {
		t.Fatalf("comparisons %+v, clean %+v", r.Comparisons, r.CleanComparisons)
	}
	scored, clean := r.Comparisons[0], r.CleanComparisons[0]
	if scored.Paired != 6 || scored.OnlyAnchor != 3 || scored.OnlyMethod != 1 || scored.Better != "A" {
		t.Errorf("as scored: %+v; want 6 paired, 3 only A, 1 only B, A better", scored)
	}
	if clean.Paired != 4 || clean.OnlyAnchor != 1 || clean.OnlyMethod != 1 || clean.Better != "" {
		t.Errorf("on clean issues: %+v; want 4 paired (i2 i4 i5 i6), 1 only A, 1 only B, no difference", clean)
	}

	md := r.Markdown()
	for _, section := range []string{"## Failures per method", "## Paired comparisons on clean issues"} {
		if !strings.Contains(md, section) {
			t.Errorf("report.md lacks %q:\n%s", section, md)
		}
	}
	// On i2 i4 i5 i6: A resolves i4 i6, B i2 i4: 50% each.
	if !regexp.MustCompile(`(?m)^\| m \| A \| B \| 4 \| 50\.0 \| 50\.0 \| \+0\.0 \|.*\| 1 \| 1 \| no difference \|`).MatchString(md) {
		t.Errorf("report.md lacks the clean comparison A vs B on 4 issues:\n%s", md)
	}
	page, err := r.HTML(HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{`id="failures"`, `id="comparisons_clean"`, "errored: " + string(endpoint)} {
		if !strings.Contains(string(page), id) {
			t.Errorf("report.html lacks %s", id)
		}
	}

	// Without an error that is not the model's, the report says the comparisons are the clean ones too.
	var modelOnly []results.Row
	for _, row := range failureRows() {
		if k := row.String(results.FieldErrorKind); k == "" || errkind.ClassOf(k) == errkind.Model {
			modelOnly = append(modelOnly, row)
		}
	}
	r2, err := Build(modelOnly, nil, Options{Title: "t", Source: "s", Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.CleanComparisons) != 0 || !strings.Contains(r2.Markdown(), "No row has an error that is not the model's") {
		t.Errorf("model errors only: clean comparisons %+v\n%s", r2.CleanComparisons, r2.Markdown())
	}
}

func keys(m map[string]Table) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestReportFlagsServedModel: rows whose endpoint named another model than the spec's carry model_served; the
// report says so for their method, in report.md and report.html, and the drill-down shows it per row.
func TestReportFlagsServedModel(t *testing.T) {
	rows := failureRows()
	rows[0][specs.ModelServed.Name] = "m-2025-01-01"
	rows[4][specs.ModelServed.Name] = "m-2025-01-01"
	r, err := Build(rows, nil, Options{Title: "t", Source: "s", Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	note := "A: 2 of its 6 rows were answered by another model than the spec's m, as the endpoint named it: m-2025-01-01 (2)."
	if !strings.Contains(r.Markdown(), note) {
		t.Errorf("report.md lacks %q:\n%s", note, r.Markdown())
	}
	page, err := r.HTML(HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), html.EscapeString(note)) || !strings.Contains(string(page), `<td class="t">m-2025-01-01</td>`) {
		t.Errorf("report.html lacks the note or the served model of the row")
	}
	for _, n := range r.Notes {
		if strings.HasPrefix(n, "B:") {
			t.Errorf("B was answered by its own model, yet: %s", n)
		}
	}
}

// TestMarkdownEscapesNames: instance, method and model names holding HTML, Markdown links and images, and line
// breaks stay plain text in report.md, as report.html keeps them (html/template).
func TestMarkdownEscapesNames(t *testing.T) {
	const (
		inst   = `<img src=x onerror=alert(1)>`
		method = `<script>alert(1)</script>`
		model  = "<b>m</b>![t](http://tracker.example/p.png)"
		other  = "[click](javascript:alert(1))\n| forged | row |"
	)
	row := func(i, m string, res bool) results.Row {
		return results.Row{results.FieldInstance: i, results.FieldMethod: m, results.FieldModel: model,
			specs.Resolved.Name: res}
	}
	rows := []results.Row{row(inst, method, true), row(inst, other, false), row("i2", method, false),
		row("i2", other, true), row("i3", method, true), row("i3", other, false)}
	r, err := Build(rows, nil, Options{Title: "<h1>t</h1>", Source: "rows`.jsonl", Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	md := r.Markdown()
	for _, bad := range []string{"<img", "<script", "<b>", "<h1>", "\n| forged"} {
		if strings.Contains(md, bad) {
			t.Errorf("report.md keeps %q:\n%s", bad, md)
		}
	}
	if link := regexp.MustCompile(`[^\\]\]\((http://tracker|javascript)`).FindString(md); link != "" {
		t.Errorf("report.md keeps a link or an image of a name: %q\n%s", link, md)
	}
	for _, good := range []string{"&lt;script>alert(1)&lt;/script>", "&lt;img src=x onerror=alert(1)>"} {
		if !strings.Contains(md, good) {
			t.Errorf("report.md lacks the escaped %q:\n%s", good, md)
		}
	}
}

// TestMarkdownFigureLinks: a figure's link stays the plain Markdown image a renderer shows (the escaping of names
// from rows does not reach it), and a path with characters that could end or redirect the link is percent-encoded
// into a destination that still names that file.
func TestMarkdownFigureLinks(t *testing.T) {
	r, err := Build(failureRows(), nil, Options{Title: "t", Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	r.Figures = []string{"figures/resolve_ci.png", "figures/resolve_ci.svg", "my figs (2)/a b<c>&d.png",
		"javascript:alert(1).png", "x\n| forged |.png"}
	r.FigureCaptions = map[string]string{"resolve_ci": "Resolve rate per <method>."}
	md := r.Markdown()
	for _, want := range []string{"![resolve_ci](figures/resolve_ci.png)\n\nResolve rate per &lt;method>.",
		"](my%20figs%20%282%29/a%20b%3Cc%3E%26d.png)", "](javascript%3Aalert%281%29.png)", "](x%0A%7C%20forged%20%7C.png)"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "resolve_ci.svg") || strings.Contains(md, "\n| forged") {
		t.Errorf("report.md links an SVG or keeps a forged row:\n%s", md)
	}
}
