package specs

import (
	"strings"
	"testing"
)

// TestSamplesShareEveryNodeAboveThePatch: a method of k samples is k arms whose checkout and context nodes are one
// (counted in the plan's nodes), whose patch nodes differ only by the patch step's sample param, and whose first
// sample is the node a method of one sample has, so that raising k pays for no earlier sample again.
func TestSamplesShareEveryNodeAboveThePatch(t *testing.T) {
	one, err := BuildPlan(goodExperiment())
	if err != nil {
		t.Fatal(err)
	}
	e := goodExperiment()
	e.Methods[1].Samples = 3
	three, err := BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	// checkout + 2 methods x (context, patch, measure, grade); 2 more samples add a patch, measure and grade each.
	if len(one.Nodes) != 9 || len(three.Nodes) != 9+2*3 {
		t.Fatalf("nodes: %d with one sample, %d with three; want 9 and 15", len(one.Nodes), len(three.Nodes))
	}
	if len(three.Arms) != 4 {
		t.Fatalf("arms %+v", three.Arms)
	}
	if a := three.Arms[0]; a.Method != "no_source" || a.Samples != 0 || a.Sample != 0 {
		t.Errorf("a method of one sample's arm %+v carries samples", a)
	}
	key := func(a Arm, id string) string {
		for _, s := range a.Steps {
			if s.ID == id {
				return s.Key
			}
		}
		t.Fatalf("arm %s has no step %s", a.Method, id)
		return ""
	}
	patches := map[string]bool{}
	for i, a := range three.Arms[1:] {
		if a.Method != "oracle_files" || a.Model != "offline" || a.Samples != 3 || a.Sample != i {
			t.Errorf("arm %d: %+v", i+1, a)
		}
		for _, id := range []string{"checkout", "context"} {
			if key(a, id) != key(one.Arms[1], id) {
				t.Errorf("sample %d's %s node %s is not the one-sample plan's %s", i, id, key(a, id), key(one.Arms[1], id))
			}
		}
		patches[key(a, "patch")] = true
		for _, n := range three.Nodes {
			if n.Key == key(a, "patch") {
				if got, want := n.Params["sample"], float64(i); i > 0 && got != want || i == 0 && got != nil {
					t.Errorf("sample %d's patch param sample = %v", i, got)
				}
			}
		}
	}
	if len(patches) != 3 {
		t.Errorf("3 samples share patch nodes: %v", patches)
	}
	for _, id := range []string{"patch", "measure", "grade"} {
		if key(three.Arms[1], id) != key(one.Arms[1], id) {
			t.Errorf("sample 0's %s node is not the one-sample method's", id)
		}
	}
	// Sample 1's patch is the node of a method that asks for patch sample 1 itself (cq2care_patch_resample's way).
	r := goodExperiment()
	r.Methods[1].Steps[2].Params = map[string]any{"sample": 1}
	resample, err := BuildPlan(r)
	if err != nil {
		t.Fatal(err)
	}
	if key(resample.Arms[1], "patch") != key(three.Arms[2], "patch") {
		t.Error("sample 1's patch node is not the node of a patch step of sample 1")
	}
}

// TestSamplesSpecWide: the experiment's samples apply to every method that sets none; a method's own wins.
func TestSamplesSpecWide(t *testing.T) {
	e := goodExperiment()
	e.Samples = 2
	e.Methods[0].Samples = 1
	if errs := Validate(e); errs != nil {
		t.Fatal(errs)
	}
	p, err := BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range p.Arms {
		got = append(got, a.Method+"/"+string(rune('0'+a.Samples))+"/"+string(rune('0'+a.Sample)))
	}
	if strings.Join(got, " ") != "no_source/0/0 oracle_files/2/0 oracle_files/2/1" {
		t.Errorf("arms %v", got)
	}
}

func TestValidateSamples(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(e *Experiment)
		want string
	}{
		{"negative", func(e *Experiment) { e.Methods[0].Samples = -1 }, "samples -1 must be from 1 to 100"},
		{"too many", func(e *Experiment) { e.Samples = MaxSamples + 1 }, "samples 101 must be from 1 to 100"},
		{"no patch step", func(e *Experiment) {
			e.Samples = 2
			e.Methods[0].Steps = e.Methods[0].Steps[:2]
		}, `method "no_source" draws 2 patch samples but has 0 patch steps`},
	} {
		e := goodExperiment()
		c.set(e)
		errs := Validate(e)
		var msgs []string
		for _, err := range errs {
			msgs = append(msgs, err.Error())
		}
		if !strings.Contains(strings.Join(msgs, "\n"), c.want) {
			t.Errorf("%s: errors %v, want one saying %q", c.name, msgs, c.want)
		}
	}
}
