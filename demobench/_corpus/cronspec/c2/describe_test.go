package cronspec

import "testing"

func TestDescribeCommon(t *testing.T) {
	cases := map[string]string{
		"* * * * *":                "every minute",
		"*/15 * * * *":             "every 15 minutes",
		"30 9-17 * * MON-FRI":      "at minute 30, between 09:00 and 17:59, Monday through Friday",
		"0 0 1 JAN *":              "at minute 0, past hour 0, on day 1 of the month, in January",
		"@daily":                   "once a day, at midnight",
		"CRON_TZ=UTC 0,30 * * * 0": "at minutes 0, 30, Sunday",
	}
	for spec, want := range cases {
		got, err := Describe(spec)
		if err != nil || got != want {
			t.Errorf("Describe(%q) = %q, %v\n want %q", spec, got, err, want)
		}
	}
}

// TestDescribeRangeWithStep covers steps over a range and steps from a start value.
func TestDescribeRangeWithStep(t *testing.T) {
	cases := map[string]string{
		"3-59/15 * * * *":  "every 15 minutes from minute 3 through 59",
		"10-40/10 * * * *": "every 10 minutes from minute 10 through 40",
		"5/15 * * * *":     "every 15 minutes starting at minute 5",
		"0 1-23/6 * * *":   "at minute 0, every 6 hours from 1-23",
	}
	for spec, want := range cases {
		got, err := Describe(spec)
		if err != nil || got != want {
			t.Errorf("Describe(%q) = %q, %v\n want %q", spec, got, err, want)
		}
	}
}

func TestDescribeRejectsInvalid(t *testing.T) {
	if _, err := Describe("61 * * * *"); err == nil {
		t.Fatal("want an error")
	}
}
