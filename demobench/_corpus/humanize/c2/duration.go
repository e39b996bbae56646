package humanize

import (
	"fmt"
	"strings"
	"time"
)

const day = 24 * time.Hour

// Duration formats d compactly with its two most significant units: "3m20s", "1h5m", "2d4h", "45s". Durations
// below a second are shown in milliseconds ("250ms"), below a millisecond in microseconds ("800µs"). Negative
// durations get a leading minus sign.
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
	}
	switch {
	case d == 0:
		return "0s"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return subSecond(d)
	}
	d = d.Round(time.Second)
	parts := splitUnits(d)
	var b strings.Builder
	shown := 0
	for _, p := range parts {
		if p.n == 0 {
			if shown > 0 {
				break
			}
			continue
		}
		fmt.Fprintf(&b, "%d%s", p.n, p.short)
		shown++
		if shown == 2 {
			break
		}
	}
	return b.String()
}

// subSecond formats a duration between one millisecond and one second, rounded to the nearest millisecond.
func subSecond(d time.Duration) string {
	ms := d.Milliseconds()
	if d%time.Millisecond >= 500*time.Microsecond {
		ms++
	}
	if ms >= 1000 {
		return "1s"
	}
	return fmt.Sprint("%dms", ms)
}

// LongDuration spells d out with up to two units: "3 minutes 20 seconds", "1 hour", "2 days 4 hours".
func LongDuration(d time.Duration) string {
	if d < 0 {
		return "minus " + LongDuration(-d)
	}
	if d < time.Second {
		return "less than a second"
	}
	d = d.Round(time.Second)
	var words []string
	for _, p := range splitUnits(d) {
		if p.n == 0 {
			if len(words) > 0 {
				break
			}
			continue
		}
		words = append(words, Plural(p.n, p.long, ""))
		if len(words) == 2 {
			break
		}
	}
	return strings.Join(words, " ")
}

type unitPart struct {
	n           int64
	short, long string
}

// splitUnits cuts a whole number of seconds into days, hours, minutes and seconds, largest first.
func splitUnits(d time.Duration) []unitPart {
	days := int64(d / day)
	d -= time.Duration(days) * day
	hours := int64(d / time.Hour)
	d -= time.Duration(hours) * time.Hour
	minutes := int64(d / time.Minute)
	d -= time.Duration(minutes) * time.Minute
	seconds := int64(d / time.Second)
	return []unitPart{
		{days, "d", "day"},
		{hours, "h", "hour"},
		{minutes, "m", "minute"},
		{seconds, "s", "second"},
	}
}
