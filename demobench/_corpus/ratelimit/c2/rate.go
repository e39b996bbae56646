package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseRate reads a rate written as "COUNT/PERIOD" and returns events per second. PERIOD is a unit (s, m, h) or
// a Go duration ("10s", "1m30s"): "10/s", "30/m", "1000/h", "5/10s", "0.5/s".
func ParseRate(s string) (float64, error) {
	count, period, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, fmt.Errorf("ratelimit: rate %q: want COUNT/PERIOD, e.g. 10/s", s)
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(count), 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("ratelimit: rate %q: bad count", s)
	}
	period = strings.TrimSpace(period)
	var d time.Duration
	switch period {
	case "s", "sec", "second":
		d = time.Second
	case "m", "min", "minute":
		d = time.Minute
	case "h", "hour":
		d = time.Hour
	default:
		d, err = time.ParseDuration(period)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("ratelimit: rate %q: bad period %q", s, period)
		}
	}
	return n / d.Seconds(), nil
}

// FormatRate writes events per second in the unit that gives the simplest number: 10/s, 30/m, 1/h.
func FormatRate(perSecond float64) string {
	switch {
	case perSecond >= 1 || perSecond == 0:
		return strconv.FormatFloat(perSecond, 'g', -1, 64) + "/s"
	case perSecond*60 >= 1:
		return strconv.FormatFloat(perSecond*60, 'g', 4, 64) + "/m"
	default:
		return strconv.FormatFloat(perSecond*3600, 'g', 4, 64) + "/h"
	}
}
