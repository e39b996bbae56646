package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"slices"
	"strings"

	"ctxlab/results"
	"ctxlab/specs"
)

// Detail is what the HTML drill-down shows of one row besides its fields: the context's files, the patch and the
// test log, read from the content store, each with its reference.
type Detail struct {
	ContextRef   string
	ContextFiles []string
	PatchRef     string
	Patch        string
	TestLogRef   string
	TestLog      string
	// Problems say what could not be read, and why.
	Problems []string
}

// Figure is a drawn figure: its name (file stem), its SVG document and its caption.
type Figure struct {
	Name, Caption string
	SVG           []byte
}

// HTMLOptions are what report.html needs beyond the report.
type HTMLOptions struct {
	// Details are keyed by the row's (instance, method, model).
	Details map[results.Key]Detail
	Figures []Figure
	// Link returns the URL (relative to the page) of a stored object, or "" when the page cannot reach it.
	Link func(ref string) string
	// Run names the run in the `starter audit RUN --show REF` hint.
	Run string
}

// MaxLogChars bounds each test log on the page; the log's end is kept (the verdict is there), the whole log is
// behind its reference.
const MaxLogChars = 20000

// HTML renders report.html: one self-contained page (no scripts, no fetches: figures are inlined as data: images,
// and a Content-Security-Policy forbids anything else) with the report's tables, its figures and a drill-down per
// instance and method. Everything from rows and stored objects is escaped by html/template.
func (r *Report) HTML(o HTMLOptions) ([]byte, error) {
	view := htmlPage{Title: r.Title, Source: r.Source, Run: o.Run, Notes: r.Notes}
	for _, c := range RowColumns {
		view.RowHeads = append(view.RowHeads, c.Heading())
	}
	if view.Run == "" {
		view.Run = "NAME"
	}
	nm := map[string]bool{}
	for _, m := range r.Methods {
		nm[m.Method] = true
	}
	view.Summary = fmt.Sprintf("%d rows, %d issues, %d methods, %d method × model arms.", r.Rows, r.Instances,
		len(nm), len(r.Methods))
	view.Tables = r.htmlTables()
	for _, f := range o.Figures {
		// A data: URL of base64 text cannot carry markup into the page, whatever the SVG holds.
		view.Figures = append(view.Figures, htmlFigure{Name: f.Name, Caption: f.Caption,
			Src: template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(f.SVG))})
	}
	view.Instances = r.htmlInstances(o)
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, view); err != nil {
		return nil, fmt.Errorf("report: html: %w", err)
	}
	return b.Bytes(), nil
}

// htmlPage is what pageTemplate renders.
type htmlPage struct {
	Title, Source, Summary, Run string
	// RowHeads head the RowColumns of each instance's table.
	RowHeads  []string
	Notes     []string
	Tables    []htmlTable
	Figures   []htmlFigure
	Instances []htmlInstance
}

type htmlCell struct {
	Text string
	Left bool // a text column
}

type htmlTable struct {
	Name, Caption string
	Head          []htmlCell
	Rows          [][]htmlCell
	Text          string
}

type htmlRef struct {
	Ref, URL string
}

// htmlArm is one row of an instance: one method on one model. Values are its RowColumns' cells.
type htmlArm struct {
	Method, Model, Label, Resolved, Status, Error, Served string
	ResolvedOK                                            bool
	Values                                                []string
	Files                                                 []string
	Context, PatchRef, LogRef                             htmlRef
	Patch, Log                                            string
	LogCut                                                int
	Problems                                              []string
	HasDetail                                             bool
}

// RowColumns are the fields report.html shows on each row's line (specs.RowTable), after its outcome.
var RowColumns = specs.Columns(specs.RowTable)

type htmlInstance struct {
	ID, Anchor string
	Resolved   int
	Arms       []htmlArm
}

type htmlFigure struct {
	Name, Caption string
	Src           template.URL
}

// htmlTables are the report's tables, each with the short text the page shows under its caption.
func (r *Report) htmlTables() []htmlTable {
	texts := map[string]string{
		"methods": "n: issues with a row. resolved % and applied %: share of the n rows (a row with an error " +
			"counts as neither). – : no row carries the field.",
		"comparisons": fmt.Sprintf("Anchor: %s (%s). better: the side with more discordant wins, %s when the "+
			"counts are equal (no direction is claimed). The test is one-sided exact McNemar; one-sided H1 is the "+
			"alternative tested (A > B: A resolves more). p Holm: adjusted over all comparisons.%s", r.Anchor,
			r.AnchorFrom, NoDifference, r.perIssueMeansText()),
		"disagreements": "The issues exactly one method of a pair resolves: the discordant pairs behind each " +
			"McNemar count." + r.perIssueMeansText(),
		"failures": "resolved and unresolved: rows without an error; errored: rows with one, by whose failure it " +
			"is (the class of the row's error_kind).",
		"budget_fit": "Each fitted row's context tokens against its budget, in the tokenizer the rows name; " +
			"error: (context − budget) / budget; outside: more than ±2% off, with the reason.",
		"comparisons_clean": "The paired comparisons on the issues where neither row has an error that is not " +
			"the model's: whether such failures moved a result. p Holm: adjusted over these comparisons." +
			r.perIssueMeansText(),
	}
	var tables []htmlTable
	for _, t := range r.Tables() {
		tv := htmlTable{Name: t.Name, Caption: t.Caption, Text: texts[t.Name]}
		for _, h := range t.Head {
			tv.Head = append(tv.Head, htmlCell{h, textColumns[h]})
		}
		for _, row := range t.rows {
			cells := make([]htmlCell, len(row))
			for i, c := range row {
				cells[i] = htmlCell{c.show, textColumns[t.Head[i]]}
			}
			tv.Rows = append(tv.Rows, cells)
		}
		tables = append(tables, tv)
	}
	return tables
}

// htmlInstances are the counted rows grouped by instance, instances in the order of their first row and each
// instance's methods in the report's order, as in its tables.
func (r *Report) htmlInstances(o HTMLOptions) []htmlInstance {
	order := map[results.Key]int{}
	for i, m := range r.Methods {
		order[results.Key{Method: m.Method, Model: m.Model}] = i
	}
	byInst := map[string]*htmlInstance{}
	var instances []string // in the order of their first row
	for _, row := range r.rows {
		id := row.Key()
		iv := byInst[id.Instance]
		if iv == nil {
			iv = &htmlInstance{ID: id.Instance, Anchor: "inst-" + anchorID(id.Instance)}
			byInst[id.Instance] = iv
			instances = append(instances, id.Instance)
		}
		a := r.htmlArm(row, o)
		if a.ResolvedOK {
			iv.Resolved++
		}
		iv.Arms = append(iv.Arms, a)
	}
	var views []htmlInstance
	for _, id := range instances {
		iv := byInst[id]
		slices.SortStableFunc(iv.Arms, func(x, y htmlArm) int {
			return order[results.Key{Method: x.Method, Model: x.Model}] - order[results.Key{Method: y.Method, Model: y.Model}]
		})
		views = append(views, *iv)
	}
	return views
}

// htmlArm is one row's line and drill-down: its fields and, when o has its details, its stored objects.
func (r *Report) htmlArm(row results.Row, o HTMLOptions) htmlArm {
	link := func(ref string) htmlRef {
		v := htmlRef{Ref: ref}
		if ref != "" && o.Link != nil {
			v.URL = o.Link(ref)
		}
		return v
	}
	id := row.Key()
	a := htmlArm{Method: id.Method, Model: id.Model, Label: label(id.Method, id.Model, r.models()),
		Resolved: yesNo(graded(row)), Status: row.String(specs.GradeStatus.Name),
		Error: row.String(results.FieldError), Served: row.String(specs.ModelServed.Name), ResolvedOK: resolved(row)}
	for _, c := range RowColumns {
		a.Values = append(a.Values, results.Show(c, row.FieldValue(c.Field)))
	}
	if a.Error == "" {
		a.Error = row.String(specs.GradeError.Name)
	}
	if d, ok := o.Details[id]; ok {
		a.HasDetail = true
		a.Files, a.Patch, a.Problems = d.ContextFiles, d.Patch, d.Problems
		a.Context, a.PatchRef, a.LogRef = link(d.ContextRef), link(d.PatchRef), link(d.TestLogRef)
		a.Log = d.TestLog
		if len(a.Log) > MaxLogChars {
			a.LogCut = len(a.Log) - MaxLogChars
			a.Log = a.Log[a.LogCut:]
		}
	} else if ref := row.String(specs.PatchRef.Name); ref != "" {
		a.PatchRef = link(ref)
	}
	return a
}

// CountedRows are the rows the report counted: the first of each (instance, method, model), in file order.
func (r *Report) CountedRows() []results.Row { return r.rows }

func yesNo(v, ok bool) string {
	switch {
	case !ok:
		return missing
	case v:
		return "yes"
	}
	return "no"
}

// anchorID keeps letters, digits, '-' and '_' of an instance id and hex-encodes the rest, so fragment links work
// for any id.
func anchorID(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, ".%02x", c)
		}
	}
	return b.String()
}

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em 2em; color: #1d1d1f; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
nav a { margin-right: 1em; } .scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 13px; }
th, td { border: 1px solid #d0d0d0; padding: 2px 7px; text-align: right; white-space: nowrap; }
th { background: #f0f2f5; } td.t, th.t { text-align: left; }
tbody tr:nth-child(even) { background: #fafbfc; }
.caption { color: #444; max-width: 75em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #e0e0e0; }
figcaption { color: #444; max-width: 75em; }
details { margin: 0.3em 0; } summary { cursor: pointer; }
details.inst { border: 1px solid #ddd; border-radius: 4px; padding: 0.3em 0.8em; }
details.inst > summary { font-weight: 600; }
pre { background: #f6f8fa; border: 1px solid #e1e4e8; padding: 0.5em; overflow-x: auto; max-height: 30em; font-size: 12px; }
.yes { color: #116329; font-weight: 600; } .no { color: #a40e26; }
code { font-size: 12px; } .meta { color: #555; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">Computed by <code>starter report</code> from <code>{{.Source}}</code>: {{.Summary}}</p>
<nav>{{range .Tables}}<a href="#{{.Name}}">{{.Name}}</a>{{end}}{{if .Figures}}<a href="#figures">figures</a>{{end}}<a href="#instances">instances</a></nav>
{{if .Notes}}<ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .Tables}}
<section id="{{.Name}}">
<h2>{{.Caption}}</h2>
{{if .Text}}<p class="caption">{{.Text}}</p>{{end}}
{{if gt (len .Rows) 30}}<details><summary>{{len .Rows}} rows</summary>{{end}}<div class="scroll"><table>
<thead><tr>{{range .Head}}<th{{if .Left}} class="t"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td{{if .Left}} class="t"{{end}}>{{.Text}}</td>{{end}}</tr>{{end}}</tbody>
</table></div>{{if gt (len .Rows) 30}}</details>{{end}}
</section>
{{end}}
{{if .Figures}}
<section id="figures">
<h2>Figures</h2>
{{range .Figures}}<figure id="fig-{{.Name}}"><img src="{{.Src}}" alt="{{.Name}}">{{if .Caption}}<figcaption>{{.Caption}}</figcaption>{{end}}</figure>
{{end}}
</section>
{{end}}
<section id="instances">
<h2>Per instance</h2>
<p class="caption">Every instance with every method: resolved or not, rho, epsilon, context tokens, the grade; open a
method for its context's files, its patch and its test log. A reference names a content-store object;
<code>starter audit {{.Run}} --show REF</code> prints it.</p>
{{range .Instances}}
<details class="inst" id="{{.Anchor}}">
<summary>{{.ID}} — resolved by {{.Resolved}} of {{len .Arms}} methods</summary>
<table>
<thead><tr><th class="t">method</th><th>resolved</th>{{range $.RowHeads}}<th>{{.}}</th>{{end}}<th class="t">grade</th><th class="t">error</th><th class="t">served by</th></tr></thead>
<tbody>{{range .Arms}}<tr><td class="t">{{.Label}}</td><td class="{{if .ResolvedOK}}yes{{else}}no{{end}}">{{.Resolved}}</td>{{range .Values}}<td>{{.}}</td>{{end}}<td class="t">{{.Status}}</td><td class="t">{{.Error}}</td><td class="t">{{.Served}}</td></tr>
{{end}}</tbody>
</table>
{{range .Arms}}
<details class="arm">
<summary>{{.Label}}: {{if .ResolvedOK}}resolved{{else}}not resolved{{end}}</summary>
{{if .HasDetail}}
<p>Context {{template "ref" .Context}}: files shown: {{len .Files}}</p>
{{if .Files}}<ul>{{range .Files}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
<p>Patch {{template "ref" .PatchRef}}{{if not .Patch}}: empty{{end}}</p>
{{if .Patch}}<pre>{{.Patch}}</pre>{{end}}
{{if .LogRef.Ref}}<p>Test log {{template "ref" .LogRef}}{{if .LogCut}} (its last {{len .Log}} bytes; {{.LogCut}} bytes before them are behind the reference){{end}}</p>
<pre>{{.Log}}</pre>{{else}}<p>No test log: the tests did not run{{if .Status}} (grade: {{.Status}}){{end}}.</p>{{end}}
{{else}}
<p>No stored objects were found for this row{{if .PatchRef.Ref}}; patch {{template "ref" .PatchRef}}{{end}}.</p>
{{end}}
{{range .Problems}}<p class="no">{{.}}</p>{{end}}
</details>
{{end}}
</details>
{{end}}
</section>
</body>
</html>
{{define "ref"}}{{if .Ref}}{{if .URL}}<a href="{{.URL}}"><code>{{.Ref}}</code></a>{{else}}<code>{{.Ref}}</code>{{end}}{{else}}(none){{end}}{{end}}
`))
