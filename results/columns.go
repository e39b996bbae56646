package results

import (
	"fmt"

	"ctxlab/specs"
)

// Value is a statistic or a row's value that may be missing: OK is false when no row carries the field (shown as
// Missing, never 0).
type Value struct {
	V  float64
	OK bool
}

// Missing is how a table shows a missing value.
const Missing = "–"

// Show formats v as column c says: a number by its Format, a row's bool (a Value column of a bool field) as yes or
// no; Missing when v is.
func Show(c specs.FieldColumn, v Value) string {
	switch {
	case !v.OK:
		return Missing
	case c.Stat == specs.Value && c.Field.Kind == specs.KindBool && v.V != 0:
		return "yes"
	case c.Stat == specs.Value && c.Field.Kind == specs.KindBool:
		return "no"
	}
	return fmt.Sprintf(c.Format, v.V)
}

// FieldValue reads a field of a row as a number: a bool as 1 or 0; missing when the row lacks it or holds null.
func (r Row) FieldValue(f specs.RowField) Value {
	if f.Kind == specs.KindBool {
		b, ok := r.Bool(f.Name)
		if b {
			return Value{V: 1, OK: ok}
		}
		return Value{OK: ok}
	}
	v, ok := r.Float(f.Name)
	return Value{V: v, OK: ok}
}

// Carried returns field f's values on the rows that carry it, in row order (FieldValue).
func Carried(rows []Row, f specs.RowField) []float64 {
	var out []float64
	for _, r := range rows {
		if v := r.FieldValue(f); v.OK {
			out = append(out, v.V)
		}
	}
	return out
}

// StatOf computes column c's statistic over rows, as its specs.Stat says. A Median column is the report's to
// compute (results/stats, which results does not link): StatOf leaves it missing.
func StatOf(c specs.FieldColumn, rows []Row) Value {
	xs := Carried(rows, c.Field)
	count := func(keep func(float64) bool) float64 {
		n := 0
		for _, x := range xs {
			if keep(x) {
				n++
			}
		}
		return float64(n)
	}
	isTrue := func(x float64) bool { return x != 0 }
	switch c.Stat {
	case specs.Mean:
		if len(xs) == 0 {
			return Value{}
		}
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return Value{V: s / float64(len(xs)), OK: true}
	case specs.PctTrue, specs.PctZero:
		if len(xs) == 0 {
			return Value{}
		}
		keep := isTrue
		if c.Stat == specs.PctZero {
			keep = func(x float64) bool { return x == 0 }
		}
		return Value{V: 100 * count(keep) / float64(len(xs)), OK: true}
	case specs.PctOfRows, specs.PctOfRowsIfAny:
		if len(rows) == 0 || c.Stat == specs.PctOfRowsIfAny && len(xs) == 0 {
			return Value{}
		}
		return Value{V: 100 * count(isTrue) / float64(len(rows)), OK: true}
	}
	return Value{}
}
