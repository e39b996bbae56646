package humanize

import (
	"testing"
	"time"
)

var relNow = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func TestRelTimePast(t *testing.T) {
	cases := map[time.Duration]string{
		500 * time.Millisecond: "just now",
		3 * time.Minute:        "3 minutes ago",
		25 * time.Hour:         "1 day ago",
		400 * day:              "1 year ago",
	}
	for ago, want := range cases {
		if got := RelTime(relNow.Add(-ago), relNow); got != want {
			t.Errorf("RelTime(-%v) = %q, want %q", ago, got, want)
		}
	}
}

func TestRelTimeFuture(t *testing.T) {
	if got := RelTime(relNow.Add(2*time.Hour), relNow); got != "in 2 hours" {
		t.Errorf("got %q", got)
	}
}
