package cronspec

import (
	"strings"
	"testing"
	"time"
)

func TestParseWildcard(t *testing.T) {
	s := MustParse("* * * * *")
	if s.minute != minuteField.full() || s.hour != hourField.full() || !s.domStar || !s.dowStar {
		t.Fatalf("wildcards not full: %+v", s)
	}
}

func TestParseListsAndRanges(t *testing.T) {
	s := MustParse("0,30 9-17 * * MON-FRI")
	if got := s.minute.String(); got != "0,30" {
		t.Errorf("minute = %s", got)
	}
	if got := s.hour.String(); got != "9,10,11,12,13,14,15,16,17" {
		t.Errorf("hour = %s", got)
	}
	if got := s.dow.String(); got != "1,2,3,4,5" {
		t.Errorf("dow = %s", got)
	}
}

func TestParseEveryN(t *testing.T) {
	if got := MustParse("*/15 * * * *").minute.String(); got != "0,15,30,45" {
		t.Errorf("*/15 = %s", got)
	}
	if got := MustParse("0 0 */10 * *").dom.String(); got != "1,11,21,31" {
		t.Errorf("day */10 = %s", got)
	}
}

func TestParseNamesAndSunday(t *testing.T) {
	s := MustParse("0 12 * jan,Jul sun")
	if got := s.month.String(); got != "1,7" {
		t.Errorf("month = %s", got)
	}
	if got := MustParse("0 0 * * 7").dow.String(); got != "0" {
		t.Errorf("dow 7 = %s, want Sunday (0)", got)
	}
}

func TestParseDescriptorsAndZones(t *testing.T) {
	if got, _ := Normalize("@hourly"); got != "0 * * * *" {
		t.Errorf("@hourly = %q", got)
	}
	s, err := Parse("CRON_TZ=UTC 30 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	if s.Location() != time.UTC {
		t.Errorf("location %v", s.Location())
	}
	if _, err := (Parser{NoDescriptors: true}).Parse("@daily"); err == nil {
		t.Error("descriptor accepted with NoDescriptors")
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"":                       "empty expression",
		"* * * *":                "want 5 fields",
		"60 * * * *":             "minute field: value 60 out of range",
		"* * * * MOON":           "day-of-week field",
		"5-1 * * * *":            "ends before it starts",
		"*/0 * * * *":            "invalid step",
		"0 0 30 2 *":             "no selected month has that day",
		"? * * * *":              "only allowed in the day fields",
		"@fortnightly":           "unknown descriptor",
		"TZ=Mars/Base * * * * *": "unknown time zone",
	}
	for spec, want := range cases {
		_, err := Parse(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", spec, err, want)
		}
	}
}

func TestNormalize(t *testing.T) {
	cases := map[string]string{
		"0 9 * * MON-FRI":     "0 9 * * 1-5",
		"30,0,15 * * * *":     "0,15,30 * * * *",
		"0 0 1 JAN,FEB,MAR *": "0 0 1 1-3 *",
		"0 0 * * 0,7":         "0 0 * * 0",
	}
	for in, want := range cases {
		got, err := Normalize(in)
		if err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
