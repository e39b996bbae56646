package cronspec

import "time"

// Schedule is a parsed cron expression.
type Schedule struct {
	spec                             string
	loc                              *time.Location
	second, minute, hour, dom, month bitset
	dow                              bitset
	// domStar and dowStar record an unrestricted day field. As in Vixie cron, when both day fields are restricted
	// a day matches if either matches; otherwise both must.
	domStar, dowStar bool
}

// String returns the expression the schedule was parsed from.
func (s *Schedule) String() string { return s.spec }

// Location returns the time zone the schedule is evaluated in.
func (s *Schedule) Location() *time.Location { return s.loc }

// maxSearch bounds the search for the next activation; an expression such as "0 0 30 2 *" never fires.
const maxSearch = 5 * 366 * 24 * time.Hour

// Next returns the first activation strictly after t, in the schedule's time zone, or the zero time if there is
// none within five years.
func (s *Schedule) Next(t time.Time) time.Time {
	t = t.In(s.loc)
	// Start at the next whole second.
	t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, s.loc).Add(time.Second)
	limit := t.Add(maxSearch)
	for t.Before(limit) {
		switch {
		case !s.month.has(int(t.Month())):
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, s.loc)
		case !s.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, s.loc)
		case !s.hour.has(t.Hour()):
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, s.loc)
		case !s.minute.has(t.Minute()):
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute()+1, 0, 0, s.loc)
		case !s.second.has(t.Second()):
			t = t.Add(time.Second)
		default:
			return t
		}
	}
	return time.Time{}
}

// NextN returns the next n activations after t.
func (s *Schedule) NextN(t time.Time, n int) []time.Time {
	var out []time.Time
	for i := 0; i < n; i++ {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

func (s *Schedule) dayMatches(t time.Time) bool {
	dom := s.dom.has(t.Day())
	dow := s.dow.has(int(t.Weekday()))
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}
