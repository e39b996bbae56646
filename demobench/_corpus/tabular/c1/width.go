package tabular

// tabWidth is the tab stop used when a cell contains tabs.
const tabWidth = 4

// displayWidth returns the number of terminal columns s takes: tabs advance to the next tab stop and control
// characters take no room.
func displayWidth(s string) int {
	w := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\t':
			w += tabWidth - w%tabWidth
		case c < 0x20 || c == 0x7f:
		default:
			w++
		}
	}
	return w
}

// ellipsis marks a cut cell. It is ASCII so that it has the same width in every terminal font.
const ellipsis = "..."

// truncate shortens s to at most max columns, marking the cut with an ellipsis. A max below 1 means no limit.
func truncate(s string, max int) string {
	if max < 1 || displayWidth(s) <= max {
		return s
	}
	if max <= len(ellipsis) {
		return ellipsis[:max]
	}
	r := []rune(s)
	for len(r) > 0 && displayWidth(string(r))+len(ellipsis) > max {
		r = r[:len(r)-1]
	}
	return string(r) + ellipsis
}

// expandTabs replaces tabs by spaces up to the next tab stop, so that padding computed with displayWidth holds.
func expandTabs(s string) string {
	hasTab := false
	for i := 0; i < len(s); i++ {
		if s[i] == '\t' {
			hasTab = true
			break
		}
	}
	if !hasTab {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	col := 0
	for _, r := range s {
		if r == '\t' {
			for n := tabWidth - col%tabWidth; n > 0; n-- {
				out = append(out, ' ')
				col++
			}
			continue
		}
		out = append(out, string(r)...)
		col += displayWidth(string(r))
	}
	return string(out)
}
