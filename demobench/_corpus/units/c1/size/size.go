// Package size parses and formats byte sizes: "512", "1.5kB", "4 MiB", "2GB".
package size

import (
	"fmt"
	"strconv"
	"strings"
)

// Size is a number of bytes.
type Size int64

// Decimal and binary multiples.
const (
	KB Size = 1000
	MB      = 1000 * KB
	GB      = 1000 * MB
	TB      = 1000 * GB

	KiB Size = 1024
	MiB      = 1024 * KiB
	GiB      = 1024 * MiB
	TiB      = 1024 * GiB
)

var suffixes = map[string]Size{
	"": 1, "b": 1,
	"k": KB, "kb": KB, "m": MB, "mb": MB, "g": GB, "gb": GB, "t": TB, "tb": TB,
	"kib": KiB, "mib": MiB, "gib": GiB, "tib": TiB,
}

// Parse reads a size: a number (with an optional fraction) and an optional unit, case-insensitive, with optional
// space between them.
func Parse(s string) (Size, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size: %q: no number", s)
	}
	n, err := strconv.ParseFloat(t[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("size: %q: %w", s, err)
	}
	mult, ok := suffixes[strings.TrimSpace(t[i:])]
	if !ok {
		return 0, fmt.Errorf("size: %q: unknown unit %q", s, strings.TrimSpace(t[i:]))
	}
	return Size(n * float64(mult)), nil
}

// Format writes s with the largest decimal unit that keeps the number at least 1, with one decimal when it is not
// whole: 1500 is "1.5kB".
func Format(s Size) string {
	units := []struct {
		name string
		size Size
	}{{"TB", TB}, {"GB", GB}, {"MB", MB}, {"kB", KB}}
	for _, u := range units {
		if s >= u.size {
			return trim(float64(s)/float64(u.size)) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}

func trim(f float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0")
}
