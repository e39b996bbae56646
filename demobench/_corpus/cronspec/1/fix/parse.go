// Package cronspec parses cron expressions and computes when they fire next.
//
// The standard five fields are supported (minute, hour, day of month, month, day of week), optionally preceded by
// a seconds field, with lists, ranges, steps, month and weekday names, the @daily family of descriptors and a
// CRON_TZ= or TZ= prefix naming the time zone.
package cronspec

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseError reports a cron expression that could not be read.
type ParseError struct {
	Spec  string // the whole expression
	Field string // the field at fault, empty if the expression as a whole is wrong
	Msg   string
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("cronspec: %q: %s", e.Spec, e.Msg)
	}
	return fmt.Sprintf("cronspec: %q: %s field: %s", e.Spec, e.Field, e.Msg)
}

// Parser reads cron expressions. The zero value reads the standard five-field form with descriptors.
type Parser struct {
	// Seconds requires a leading seconds field (six fields in all).
	Seconds bool
	// NoDescriptors rejects @daily, @hourly and the like.
	NoDescriptors bool
	// Location is the time zone of expressions without a CRON_TZ= prefix; nil means time.Local.
	Location *time.Location
}

// Parse reads a standard five-field expression with the zero Parser.
func Parse(spec string) (*Schedule, error) { return Parser{}.Parse(spec) }

// MustParse is Parse for constants; it panics on a bad expression.
func MustParse(spec string) *Schedule {
	s, err := Parse(spec)
	if err != nil {
		panic(err)
	}
	return s
}

// descriptors maps the @ shorthands to five-field expressions.
var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// Parse reads one expression.
func (p Parser) Parse(spec string) (*Schedule, error) {
	orig := spec
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, &ParseError{Spec: orig, Msg: "empty expression"}
	}
	loc := p.Location
	if loc == nil {
		loc = time.Local
	}
	if tz, rest, ok := cutTimeZone(spec); ok {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return nil, &ParseError{Spec: orig, Msg: fmt.Sprintf("unknown time zone %q", tz)}
		}
		loc = l
		spec = strings.TrimSpace(rest)
	}
	if strings.HasPrefix(spec, "@") {
		if p.NoDescriptors {
			return nil, &ParseError{Spec: orig, Msg: "descriptors such as @daily are not allowed"}
		}
		expanded, ok := descriptors[strings.ToLower(spec)]
		if !ok {
			return nil, &ParseError{Spec: orig, Msg: fmt.Sprintf("unknown descriptor %q", spec)}
		}
		if p.Seconds {
			expanded = "0 " + expanded
		}
		spec = expanded
	}
	fields := strings.Fields(spec)
	want := 5
	if p.Seconds {
		want = 6
	}
	if len(fields) != want {
		return nil, &ParseError{Spec: orig, Msg: fmt.Sprintf("want %d fields, got %d", want, len(fields))}
	}
	s := &Schedule{spec: orig, loc: loc}
	if p.Seconds {
		b, err := parseField(orig, fields[0], secondField)
		if err != nil {
			return nil, err
		}
		s.second = b
		fields = fields[1:]
	} else {
		s.second = 1 // second 0
	}
	var err error
	if s.minute, err = parseField(orig, fields[0], minuteField); err != nil {
		return nil, err
	}
	if s.hour, err = parseField(orig, fields[1], hourField); err != nil {
		return nil, err
	}
	if s.dom, err = parseField(orig, fields[2], domField); err != nil {
		return nil, err
	}
	if s.month, err = parseField(orig, fields[3], monthField); err != nil {
		return nil, err
	}
	if s.dow, err = parseField(orig, fields[4], dowField); err != nil {
		return nil, err
	}
	if s.dow.has(7) {
		s.dow &^= 1 << 7
		s.dow.add(0)
	}
	s.domStar = isStar(fields[2])
	s.dowStar = isStar(fields[4])
	if err := checkDays(orig, s); err != nil {
		return nil, err
	}
	return s, nil
}

// cutTimeZone splits a "CRON_TZ=Area/City " or "TZ=Area/City " prefix from the expression.
func cutTimeZone(spec string) (tz, rest string, ok bool) {
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(spec, prefix) {
			after := spec[len(prefix):]
			i := strings.IndexAny(after, " \t")
			if i < 0 {
				return after, "", true
			}
			return after[:i], after[i:], true
		}
	}
	return "", spec, false
}

// isStar reports whether a day field is unrestricted, which changes how the two day fields combine.
func isStar(f string) bool { return f == "*" || f == "?" || strings.HasPrefix(f, "*/1") && len(f) == 3 }

// checkDays rejects day-of-month values that no selected month has, such as "30 2" (February 30th).
func checkDays(orig string, s *Schedule) error {
	if s.domStar {
		return nil
	}
	maxDays := 0
	for _, m := range s.month.values() {
		if d := daysIn(time.Month(m), 2024); d > maxDays { // 2024 is a leap year: allow February 29th
			maxDays = d
		}
	}
	for _, d := range s.dom.values() {
		if d <= maxDays {
			return nil
		}
	}
	return &ParseError{Spec: orig, Field: domField.name, Msg: "no selected month has that day"}
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// parseField parses one field: a comma-separated list of terms.
func parseField(orig, text string, f field) (bitset, error) {
	if text == "" {
		return 0, &ParseError{Spec: orig, Field: f.name, Msg: "empty field"}
	}
	var set bitset
	for _, term := range strings.Split(text, ",") {
		b, err := parseTerm(term, f)
		if err != nil {
			return 0, &ParseError{Spec: orig, Field: f.name, Msg: err.Error()}
		}
		set |= b
	}
	return set, nil
}

// parseTerm parses one term of a field: "*", "?", a value, a range "lo-hi", each optionally followed by "/step".
// A value followed by a step ("5/15") runs from that value to the end of the field.
func parseTerm(term string, f field) (bitset, error) {
	if term == "" {
		return 0, fmt.Errorf("empty list item")
	}
	rangePart, stepPart, hasStep := strings.Cut(term, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepPart)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("invalid step %q", stepPart)
		}
		if n > f.max-f.min+1 {
			return 0, fmt.Errorf("step %d is larger than the field's range %d-%d", n, f.min, f.max)
		}
		step = n
	}
	var lo, hi int
	switch {
	case rangePart == "*":
		lo, hi = f.min, f.max
	case rangePart == "?":
		if f.name != domField.name && f.name != dowField.name {
			return 0, fmt.Errorf("'?' is only allowed in the day fields")
		}
		if hasStep {
			return 0, fmt.Errorf("'?' cannot take a step")
		}
		lo, hi = f.min, f.max
	case strings.Contains(rangePart, "-"):
		var err error
		lo, hi, err = parseRange(rangePart, f)
		if err != nil {
			return 0, err
		}
	default:
		v, err := parseValue(rangePart, f)
		if err != nil {
			return 0, err
		}
		lo, hi = v, v
		if hasStep {
			hi = f.max
		}
	}
	var b bitset
	for v := lo; v <= hi; v += step {
		b.add(v)
	}
	return b, nil
}

// parseRange parses "lo-hi" with numbers or names. Wrapping ranges such as "FRI-MON" are not supported.
func parseRange(s string, f field) (int, int, error) {
	a, b, _ := strings.Cut(s, "-")
	lo, err := parseValue(a, f)
	if err != nil {
		return 0, 0, err
	}
	hi, err := parseValue(b, f)
	if err != nil {
		return 0, 0, err
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("range %s ends before it starts", s)
	}
	return lo, hi, nil
}

// parseValue parses a number or, for months and weekdays, a three-letter name.
func parseValue(s string, f field) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("missing value")
	}
	if f.names != nil {
		if v, ok := f.names[strings.ToUpper(s)]; ok {
			return v, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		if f.names != nil {
			return 0, fmt.Errorf("%q is neither a number nor a %s name", s, f.name)
		}
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < f.min || v > f.max {
		return 0, fmt.Errorf("value %d out of range %d-%d", v, f.min, f.max)
	}
	return v, nil
}

// Validate reports whether spec is a valid standard expression, without keeping the schedule.
func Validate(spec string) error {
	_, err := Parse(spec)
	return err
}

// Normalize rewrites an expression in canonical numeric form: names become numbers, lists are sorted and merged,
// runs of consecutive values become ranges and whole fields become "*". "0 9 * * MON-FRI" stays
// "0 9 * * 1-5"; "@hourly" becomes "0 * * * *".
func Normalize(spec string) (string, error) {
	s, err := Parse(spec)
	if err != nil {
		return "", err
	}
	parts := []string{
		compact(s.minute, minuteField),
		compact(s.hour, hourField),
		compact(s.dom, domField),
		compact(s.month, monthField),
		compact(s.dow, field{name: dowField.name, min: 0, max: 6}),
	}
	return strings.Join(parts, " "), nil
}

// compact prints a bitset as "*" or as a list of values and ranges.
func compact(b bitset, f field) string {
	if b == f.full() {
		return "*"
	}
	vals := b.values()
	var parts []string
	for i := 0; i < len(vals); {
		j := i
		for j+1 < len(vals) && vals[j+1] == vals[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.Itoa(vals[i]))
		case j == i+1:
			parts = append(parts, strconv.Itoa(vals[i]), strconv.Itoa(vals[j]))
		default:
			parts = append(parts, strconv.Itoa(vals[i])+"-"+strconv.Itoa(vals[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
