package cronspec

import (
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

func nextStrings(t *testing.T, spec, from string, n int) []string {
	t.Helper()
	s, err := Parser{Location: time.UTC}.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tm := range s.NextN(at(from), n) {
		out = append(out, tm.Format("2006-01-02 15:04"))
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNextEveryFiveMinutes(t *testing.T) {
	got := nextStrings(t, "*/5 * * * *", "2024-03-01 10:02", 3)
	want := []string{"2024-03-01 10:05", "2024-03-01 10:10", "2024-03-01 10:15"}
	if !equalStrings(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestNextMonthRollover(t *testing.T) {
	got := nextStrings(t, "0 0 31 * *", "2024-01-31 00:00", 2)
	want := []string{"2024-03-31 00:00", "2024-05-31 00:00"}
	if !equalStrings(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestNextWeekdaysOrMonthDay(t *testing.T) {
	// Both day fields restricted: the 1st of the month OR a Monday.
	got := nextStrings(t, "0 8 1 * MON", "2024-03-01 09:00", 3)
	want := []string{"2024-03-04 08:00", "2024-03-11 08:00", "2024-03-18 08:00"}
	if !equalStrings(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestNextNeverFires(t *testing.T) {
	s := &Schedule{loc: time.UTC, second: 1, minute: 1, hour: 1, dom: 1 << 31, month: 1 << 4, dow: dowField.full(), dowStar: true}
	if got := s.Next(at("2024-01-01 00:00")); !got.IsZero() {
		t.Fatalf("got %v, want the zero time", got)
	}
}

func TestNextRangeWithStep(t *testing.T) {
	got := nextStrings(t, "5/20 9-17 * * *", "2024-03-01 09:50", 4)
	want := []string{"2024-03-01 10:05", "2024-03-01 10:25", "2024-03-01 10:45", "2024-03-01 11:05"}
	if !equalStrings(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
