package humanize

import "time"

// RelTime describes then relative to now: "3 minutes ago", "in 2 hours", "just now" (within a second).
// Only the most significant unit is kept.
func RelTime(then, now time.Time) string {
	d := now.Sub(then)
	future := d < 0
	if future {
		d = -d
	}
	if d < time.Second {
		return "just now"
	}
	var text string
	switch {
	case d < time.Minute:
		text = Plural(int64(d/time.Second), "second", "")
	case d < time.Hour:
		text = Plural(int64(d/time.Minute), "minute", "")
	case d < day:
		text = Plural(int64(d/time.Hour), "hour", "")
	case d < 30*day:
		text = Plural(int64(d/day), "day", "")
	case d < 365*day:
		text = Plural(int64(d/(30*day)), "month", "")
	default:
		text = Plural(int64(d/(365*day)), "year", "")
	}
	if future {
		return "in " + text
	}
	return text + " ago"
}
