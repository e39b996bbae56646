package cronspec

import (
	"math/bits"
	"strconv"
	"strings"
)

// field describes one position of a cron expression.
type field struct {
	name     string
	min, max int
	names    map[string]int // symbolic values (JAN, MON), upper case
}

var (
	secondField = field{name: "second", min: 0, max: 59}
	minuteField = field{name: "minute", min: 0, max: 59}
	hourField   = field{name: "hour", min: 0, max: 23}
	domField    = field{name: "day-of-month", min: 1, max: 31}
	monthField  = field{name: "month", min: 1, max: 12, names: map[string]int{
		"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
		"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
	}}
	// Day of week 7 is accepted as another Sunday and folded onto 0 by the parser.
	dowField = field{name: "day-of-week", min: 0, max: 7, names: map[string]int{
		"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6,
	}}
)

// bitset holds the allowed values of a field; bit v is set when value v matches.
type bitset uint64

func (b bitset) has(v int) bool { return v >= 0 && v < 64 && b&(1<<uint(v)) != 0 }

func (b *bitset) add(v int) { *b |= 1 << uint(v) }

// count returns the number of allowed values.
func (b bitset) count() int { return bits.OnesCount64(uint64(b)) }

// values lists the allowed values in increasing order.
func (b bitset) values() []int {
	var out []int
	for v := 0; v < 64; v++ {
		if b.has(v) {
			out = append(out, v)
		}
	}
	return out
}

// String lists the allowed values, for debugging: "0,15,30,45".
func (b bitset) String() string {
	vals := b.values()
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

// full returns the set of every value of f.
func (f field) full() bitset {
	var b bitset
	for v := f.min; v <= f.max; v++ {
		b.add(v)
	}
	return b
}
