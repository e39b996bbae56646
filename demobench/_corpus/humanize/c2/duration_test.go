package humanize

import (
	"testing"
	"time"
)

func TestDurationMinutes(t *testing.T) {
	cases := map[time.Duration]string{
		45 * time.Second:                     "45s",
		3*time.Minute + 20*time.Second:       "3m20s",
		3*time.Minute + 200*time.Millisecond: "3m",
		-90 * time.Second:                    "-1m30s",
		0:                                    "0s",
	}
	for in, want := range cases {
		if got := Duration(in); got != want {
			t.Errorf("Duration(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestDurationHours(t *testing.T) {
	cases := map[time.Duration]string{
		time.Hour + 5*time.Minute:                  "1h5m",
		time.Hour + 30*time.Second:                 "1h",
		50*time.Hour + 10*time.Minute:              "2d2h",
		26*time.Hour + 3*time.Minute + time.Second: "1d2h",
	}
	for in, want := range cases {
		if got := Duration(in); got != want {
			t.Errorf("Duration(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestLongDuration(t *testing.T) {
	cases := map[time.Duration]string{
		time.Second:                    "1 second",
		3*time.Minute + 20*time.Second: "3 minutes 20 seconds",
		time.Hour:                      "1 hour",
		100 * time.Millisecond:         "less than a second",
	}
	for in, want := range cases {
		if got := LongDuration(in); got != want {
			t.Errorf("LongDuration(%v) = %q, want %q", in, got, want)
		}
	}
}
