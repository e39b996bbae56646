// Package duration parses and formats durations with the units of time.ParseDuration plus days ("d", 24h) and
// weeks ("w", 7d): "90m", "1d12h", "2w".
package duration

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Day and Week are the units this package adds to the time package's.
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
)

// Parse reads a duration: a sequence of numbers with units, as time.ParseDuration, where the units may also be d
// and w, and parts may be separated by spaces. A leading '-' negates the whole duration.
func Parse(s string) (time.Duration, error) {
	in := strings.Join(strings.Fields(s), "")
	neg := strings.HasPrefix(in, "-")
	in = strings.TrimPrefix(in, "-")
	if in == "" {
		return 0, fmt.Errorf("duration: %q: empty", s)
	}
	var total time.Duration
	for in != "" {
		i := 0
		for i < len(in) && (in[i] >= '0' && in[i] <= '9' || in[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("duration: %q: expected a number at %q", s, in)
		}
		num := in[:i]
		in = in[i:]
		j := 0
		for j < len(in) && !(in[j] >= '0' && in[j] <= '9' || in[j] == '.') {
			j++
		}
		unit := in[:j]
		in = in[j:]
		switch unit {
		case "d", "w":
			n, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, fmt.Errorf("duration: %q: %w", s, err)
			}
			mult := Day
			if unit == "w" {
				mult = Week
			}
			total += time.Duration(n * float64(mult))
		default:
			d, err := time.ParseDuration(num + unit + in)
			if err != nil {
				return 0, fmt.Errorf("duration: %q: unknown unit %q", s, unit)
			}
			total += d
			in = ""
		}
	}
	if neg {
		total = -total
	}
	return total, nil
}

// Format writes d with weeks and days when it is at least a day long ("1w2d3h"), else as time.Duration does but
// without zero parts ("1h30m", not "1h30m0s").
func Format(d time.Duration) string {
	if d < 0 {
		return "-" + Format(-d)
	}
	var b strings.Builder
	if w := d / Week; w > 0 {
		fmt.Fprintf(&b, "%dw", w)
		d -= w * Week
	}
	if days := d / Day; days > 0 {
		fmt.Fprintf(&b, "%dd", days)
		d -= days * Day
	}
	if d == 0 && b.Len() > 0 {
		return b.String()
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return b.String() + s
}
