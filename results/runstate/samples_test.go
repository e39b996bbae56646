package runstate

import (
	"testing"

	"ctxlab/results"
)

// TestComputeCountsSamplesApart: the arms of a method's patch samples are counted apart, each by its own rows (with
// the samples folded into one arm, sample 1's row would count for sample 0 and sample 1 would stay pending).
func TestComputeCountsSamplesApart(t *testing.T) {
	row := func(inst string, sample int) results.Row {
		return results.Row{results.FieldInstance: inst, results.FieldMethod: "s", results.FieldModel: "m",
			results.FieldSample: float64(sample), results.FieldError: nil}
	}
	r := Records{Rows: []results.Row{row("a", 0), row("a", 1), row("b", 1)}, Bad: map[string]int{}}
	arms := []Arm{{Method: "s", Model: "m"}, {Method: "s", Model: "m", Sample: 1}}
	st := Compute(r, Options{Instances: []string{"a", "b"}, Arms: arms, Now: at(10)})
	if len(st.Methods) != 2 || st.Methods[0].Done != 1 || st.Methods[0].Pending != 1 || st.Methods[1].Done != 2 ||
		st.OtherRows != 0 {
		t.Errorf("methods %+v, other rows %d", st.Methods, st.OtherRows)
	}
	if named := namedArms(r.Rows); len(named) != 2 || named[1].Sample != 1 {
		t.Errorf("the rows name arms %+v", named)
	}
}
