package tabular

import "strings"

// Align says where a cell's text sits within its column.
type Align int

// Alignments. Numbers read best right-aligned.
const (
	AlignLeft Align = iota
	AlignRight
	AlignCenter
)

// ParseAlign reads "left", "right" or "center" (or l, r, c).
func ParseAlign(s string) (Align, bool) {
	switch strings.ToLower(s) {
	case "left", "l":
		return AlignLeft, true
	case "right", "r":
		return AlignRight, true
	case "center", "centre", "c":
		return AlignCenter, true
	}
	return AlignLeft, false
}

func (a Align) String() string {
	switch a {
	case AlignRight:
		return "right"
	case AlignCenter:
		return "center"
	}
	return "left"
}

// pad fills s with spaces to width columns according to the alignment. Text wider than width is returned as is.
func pad(s string, width int, a Align) string {
	gap := width - displayWidth(s)
	if gap <= 0 {
		return s
	}
	switch a {
	case AlignRight:
		return strings.Repeat(" ", gap) + s
	case AlignCenter:
		left := gap / 2
		return strings.Repeat(" ", left) + s + strings.Repeat(" ", gap-left)
	}
	return s + strings.Repeat(" ", gap)
}

// looksNumeric reports whether a cell holds a number, for automatic right alignment.
func looksNumeric(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	digits := 0
	for i, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case (c == '-' || c == '+') && i == 0:
		case c == '.' || c == ',' || c == '%' || c == '_':
		default:
			return false
		}
	}
	return digits > 0
}
