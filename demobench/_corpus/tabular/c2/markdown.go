package tabular

import (
	"io"
	"strings"
)

// RenderMarkdown writes the table as a GitHub-flavoured Markdown table. Cells are padded so that the source is
// aligned too, pipes in cells are escaped and line breaks become <br>. Column alignment is expressed with colons
// in the delimiter row.
func (t *Table) RenderMarkdown(w io.Writer) error {
	n := t.numCols()
	if n == 0 {
		return nil
	}
	headers := make([]string, n)
	for c := range headers {
		headers[c] = mdEscape(t.cell(t.headers, c))
	}
	rows := make([][]string, len(t.rows))
	for i, r := range t.rows {
		rows[i] = make([]string, n)
		for c := range rows[i] {
			rows[i][c] = mdEscape(t.cell(r, c))
		}
	}
	widths := make([]int, n)
	for c := range widths {
		widths[c] = 3 // the delimiter row needs at least "---"
		if w := displayWidth(headers[c]); w > widths[c] {
			widths[c] = w
		}
		for _, r := range rows {
			if w := displayWidth(r[c]); w > widths[c] {
				widths[c] = w
			}
		}
	}
	var b strings.Builder
	writeMDRow(&b, headers, widths, t.alignOf)
	delims := make([]string, n)
	for c, wd := range widths {
		delims[c] = mdDelimiter(wd, t.alignOf(c))
	}
	b.WriteString("| " + strings.Join(delims, " | ") + " |\n")
	for _, r := range rows {
		writeMDRow(&b, r, widths, t.alignOf)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Markdown returns the table as Markdown.
func (t *Table) Markdown() string {
	var b strings.Builder
	_ = t.RenderMarkdown(&b)
	return b.String()
}

func writeMDRow(b *strings.Builder, cells []string, widths []int, align func(int) Align) {
	padded := make([]string, len(cells))
	for c, s := range cells {
		padded[c] = pad(s, widths[c], align(c))
	}
	b.WriteString("| " + strings.Join(padded, " | ") + " |\n")
}

// mdDelimiter returns the delimiter cell of a column: dashes, with colons for right or center alignment.
func mdDelimiter(width int, a Align) string {
	switch a {
	case AlignRight:
		return strings.Repeat("-", width-1) + ":"
	case AlignCenter:
		return ":" + strings.Repeat("-", width-2) + ":"
	}
	return strings.Repeat("-", width)
}

var mdReplacer = strings.NewReplacer("|", `\|`, "\r\n", "<br>", "\n", "<br>")

func mdEscape(s string) string { return mdReplacer.Replace(s) }
