package humanize

import "strconv"

// Ordinal returns n with its English ordinal suffix: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 102nd.
func Ordinal(n int64) string {
	suffix := "th"
	abs := n
	if abs < 0 {
		abs = -abs
	}
	switch abs % 100 {
	case 11, 12, 13:
	default:
		switch abs % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.FormatInt(n, 10) + suffix
}
