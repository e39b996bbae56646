package humanize

import (
	"strconv"
	"strings"
)

// Comma inserts thousands separators: Comma(1234567) == "1,234,567".
func Comma(n int64) string {
	sign := ""
	u := uint64(n)
	if n < 0 {
		sign = "-"
		u = uint64(-(n + 1)) + 1
	}
	s := strconv.FormatUint(u, 10)
	if len(s) <= 3 {
		return sign + s
	}
	var b strings.Builder
	b.WriteString(sign)
	head := len(s) % 3
	if head == 0 {
		head = 3
	}
	b.WriteString(s[:head])
	for i := head; i < len(s); i += 3 {
		b.WriteByte(',')
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// Plural returns "1 file" or "3 files". An empty plural adds "s" to singular.
func Plural(n int64, singular, plural string) string {
	if plural == "" {
		plural = singular + "s"
	}
	if n == 1 || n == -1 {
		return strconv.FormatInt(n, 10) + " " + singular
	}
	return Comma(n) + " " + plural
}

// Compact abbreviates large counts: Compact(1500) == "1.5k", Compact(2300000) == "2.3M".
func Compact(n int64) string {
	abs := n
	if abs < 0 {
		abs = -abs
	}
	units := []struct {
		size   int64
		suffix string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}}
	for _, u := range units {
		if abs >= u.size {
			v := float64(n) / float64(u.size)
			s := strconv.FormatFloat(v, 'f', 1, 64)
			s = strings.TrimSuffix(s, ".0")
			return s + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
