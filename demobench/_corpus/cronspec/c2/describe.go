package cronspec

import (
	"fmt"
	"strings"
)

// Describe returns an English description of a standard five-field expression, for user interfaces:
// "every 15 minutes from minute 3 through 59, between 09:00 and 17:59, Monday through Friday". It describes the
// expression as written; it does not evaluate it.
func Describe(spec string) (string, error) {
	if _, err := Parse(spec); err != nil {
		return "", err
	}
	spec = strings.TrimSpace(spec)
	if _, rest, ok := cutTimeZone(spec); ok {
		spec = strings.TrimSpace(rest)
	}
	if d, ok := descriptorText[strings.ToLower(spec)]; ok {
		return d, nil
	}
	f := strings.Fields(spec)
	var parts []string
	parts = append(parts, describeMinute(f[0]))
	if h := describeHour(f[1]); h != "" {
		parts = append(parts, h)
	}
	if d := describeDays(f[2], f[4]); d != "" {
		parts = append(parts, d)
	}
	if f[3] != "*" {
		parts = append(parts, "in "+describeList(f[3], monthNames))
	}
	return strings.Join(parts, ", "), nil
}

var descriptorText = map[string]string{
	"@yearly":   "once a year, at midnight on January 1",
	"@annually": "once a year, at midnight on January 1",
	"@monthly":  "once a month, at midnight on the first day",
	"@weekly":   "once a week, at midnight on Sunday",
	"@daily":    "once a day, at midnight",
	"@midnight": "once a day, at midnight",
	"@hourly":   "once an hour, at the start of the hour",
}

var (
	monthNames = []string{"", "January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December"}
	dayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
)

// describeMinute describes the minute field: "every minute", "at minute 30", "every 15 minutes",
// "every 5 minutes from minute 10 through 30".
func describeMinute(m string) string {
	rangePart, step, hasStep := strings.Cut(m, "/")
	switch {
	case m == "*":
		return "every minute"
	case hasStep && rangePart == "*":
		return fmt.Sprintf("every %s minutes", step)
	case hasStep && strings.Contains(rangePart, "-"):
		lo, hi, _ := strings.Cut(rangePart, "-")
		return fmt.Sprintf("every %s minutes from minute %s through %s", step, lo, hi)
	case hasStep:
		return fmt.Sprintf("every %s minutes starting at minute %s", step, rangePart)
	case strings.Contains(m, ","):
		return "at minutes " + strings.ReplaceAll(m, ",", ", ")
	}
	return "at minute " + m
}

func describeHour(h string) string {
	rangePart, step, hasStep := strings.Cut(h, "/")
	switch {
	case h == "*":
		return ""
	case hasStep && rangePart == "*":
		return fmt.Sprintf("every %s hours", step)
	case hasStep:
		return fmt.Sprintf("every %s hours from %s", step, rangePart)
	case strings.Contains(h, "-") && !strings.Contains(h, ","):
		lo, hi, _ := strings.Cut(h, "-")
		return fmt.Sprintf("between %s:00 and %s:59", twoDigits(lo), twoDigits(hi))
	}
	return "past hour " + strings.ReplaceAll(h, ",", ", ")
}

func describeDays(dom, dow string) string {
	var parts []string
	if dom != "*" && dom != "?" {
		parts = append(parts, "on day "+strings.ReplaceAll(dom, ",", ", ")+" of the month")
	}
	if dow != "*" && dow != "?" {
		parts = append(parts, describeList(dow, dayNames))
	}
	return strings.Join(parts, " and on ")
}

// describeList turns "MON-FRI" or "1,3" into "Monday through Friday" or "January, March".
func describeList(s string, names []string) string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		if isRange {
			out = append(out, nameOf(lo, names)+" through "+nameOf(hi, names))
		} else {
			out = append(out, nameOf(item, names))
		}
	}
	return strings.Join(out, ", ")
}

func nameOf(s string, names []string) string {
	up := strings.ToUpper(s)
	for i, n := range names {
		if strings.HasPrefix(strings.ToUpper(n), up) && len(up) == 3 {
			return n
		}
		if fmt.Sprint(i) == s && n != "" {
			return n
		}
	}
	return s
}

func twoDigits(s string) string {
	if len(s) == 1 {
		return "0" + s
	}
	return s
}
