// Package tabular renders rows of text as aligned tables for terminals and Markdown documents.
package tabular

import (
	"io"
	"strings"
)

// Table is a header and rows of cells. Rows may have fewer cells than the header; missing cells are empty.
type Table struct {
	headers   []string
	rows      [][]string
	align     map[int]Align
	autoAlign bool
	maxWidth  int
	gutter    string
}

// New returns a table with the given column headers.
func New(headers ...string) *Table {
	return &Table{headers: headers, align: map[int]Align{}, gutter: "  "}
}

// AddRow appends a row.
func (t *Table) AddRow(cells ...string) *Table {
	t.rows = append(t.rows, cells)
	return t
}

// SetAlign sets the alignment of column col (zero-based).
func (t *Table) SetAlign(col int, a Align) *Table {
	t.align[col] = a
	return t
}

// AutoAlign right-aligns columns whose cells are all numbers, unless SetAlign chose otherwise.
func (t *Table) AutoAlign(on bool) *Table {
	t.autoAlign = on
	return t
}

// SetMaxWidth limits every column to w columns; longer cells are cut with "...". 0 means no limit.
func (t *Table) SetMaxWidth(w int) *Table {
	t.maxWidth = w
	return t
}

// Rows returns the number of rows, not counting the header.
func (t *Table) Rows() int { return len(t.rows) }

// numCols is the number of columns: the longest of the header and the rows.
func (t *Table) numCols() int {
	n := len(t.headers)
	for _, r := range t.rows {
		if len(r) > n {
			n = len(r)
		}
	}
	return n
}

// cell returns the text of a cell, tabs expanded and cut to the maximum width.
func (t *Table) cell(row []string, col int) string {
	if col >= len(row) {
		return ""
	}
	return truncate(expandTabs(row[col]), t.maxWidth)
}

// columnWidths returns the width of every column: its widest cell, header included.
func (t *Table) columnWidths() []int {
	widths := make([]int, t.numCols())
	for c := range widths {
		widths[c] = displayWidth(t.cell(t.headers, c))
		for _, r := range t.rows {
			if w := displayWidth(t.cell(r, c)); w > widths[c] {
				widths[c] = w
			}
		}
	}
	return widths
}

// alignOf returns the alignment of column col.
func (t *Table) alignOf(col int) Align {
	if a, ok := t.align[col]; ok {
		return a
	}
	if t.autoAlign && len(t.rows) > 0 {
		for _, r := range t.rows {
			if c := t.cell(r, col); c != "" && !looksNumeric(c) {
				return AlignLeft
			}
		}
		return AlignRight
	}
	return AlignLeft
}

// Render writes the table as plain text: the header, a line of dashes, then the rows. Columns are separated by
// two spaces and trailing spaces are trimmed.
func (t *Table) Render(w io.Writer) error {
	widths := t.columnWidths()
	var b strings.Builder
	if len(t.headers) > 0 {
		t.writeLine(&b, t.headers, widths)
		dashes := make([]string, len(widths))
		for i, wd := range widths {
			dashes[i] = strings.Repeat("-", wd)
		}
		b.WriteString(strings.Join(dashes, t.gutter))
		b.WriteByte('\n')
	}
	for _, r := range t.rows {
		t.writeLine(&b, r, widths)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (t *Table) writeLine(b *strings.Builder, row []string, widths []int) {
	cells := make([]string, len(widths))
	for c, wd := range widths {
		cells[c] = pad(t.cell(row, c), wd, t.alignOf(c))
	}
	b.WriteString(strings.TrimRight(strings.Join(cells, t.gutter), " "))
	b.WriteByte('\n')
}

// String renders the table as plain text.
func (t *Table) String() string {
	var b strings.Builder
	_ = t.Render(&b)
	return b.String()
}
