package tabular

import (
	"io"
	"strings"
)

// Border is a set of characters for drawing a box around a table.
type Border struct {
	Horizontal, Vertical               string
	TopLeft, TopMid, TopRight          string
	MidLeft, Cross, MidRight           string
	BottomLeft, BottomMid, BottomRight string
}

// Predefined borders.
var (
	BorderASCII = Border{
		Horizontal: "-", Vertical: "|",
		TopLeft: "+", TopMid: "+", TopRight: "+",
		MidLeft: "+", Cross: "+", MidRight: "+",
		BottomLeft: "+", BottomMid: "+", BottomRight: "+",
	}
	BorderBox = Border{
		Horizontal: "─", Vertical: "│",
		TopLeft: "┌", TopMid: "┬", TopRight: "┐",
		MidLeft: "├", Cross: "┼", MidRight: "┤",
		BottomLeft: "└", BottomMid: "┴", BottomRight: "┘",
	}
)

// RenderBox writes the table inside a box drawn with b, one space of padding on each side of every cell.
func (t *Table) RenderBox(w io.Writer, b Border) error {
	widths := t.columnWidths()
	if len(widths) == 0 {
		return nil
	}
	var sb strings.Builder
	rule := func(left, mid, right string) {
		parts := make([]string, len(widths))
		for i, wd := range widths {
			parts[i] = strings.Repeat(b.Horizontal, wd+2)
		}
		sb.WriteString(left + strings.Join(parts, mid) + right + "\n")
	}
	line := func(row []string) {
		cells := make([]string, len(widths))
		for c, wd := range widths {
			cells[c] = " " + pad(t.cell(row, c), wd, t.alignOf(c)) + " "
		}
		sb.WriteString(b.Vertical + strings.Join(cells, b.Vertical) + b.Vertical + "\n")
	}
	rule(b.TopLeft, b.TopMid, b.TopRight)
	if len(t.headers) > 0 {
		line(t.headers)
		rule(b.MidLeft, b.Cross, b.MidRight)
	}
	for _, r := range t.rows {
		line(r)
	}
	rule(b.BottomLeft, b.BottomMid, b.BottomRight)
	_, err := io.WriteString(w, sb.String())
	return err
}
