package specs

import (
	"testing"
)

// TestGradePlanIsASweepsCheckoutAndGrade: a grade run's plan keys its nodes as a sweep's plan does: its checkout node
// is the sweep's, its grade node is the one a sweep would make for a patch node of the same key, and the grade
// nodes of two patches differ while one patch's stay one.
func TestGradePlanIsASweepsCheckoutAndGrade(t *testing.T) {
	grading := Grading{Executor: "local", Timeout: Duration(60e9)}
	given := PatchKey([]byte("diff --git a/x b/x\n"))
	p, err := GradePlan("predictions", "m", grading, given)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Nodes) != 2 || len(p.Arms) != 1 || p.Arms[0].Method != "predictions" || p.Arms[0].Model != "m" ||
		p.Format != PlanFormatBorrowed {
		t.Fatalf("plan %+v", p)
	}
	co, grade := p.Nodes[0], p.Nodes[1]
	// A sweep whose patch step's node had the key the given patch has.
	e := &Experiment{Grading: grading, Models: []Model{{Name: "m"}}, Methods: []Method{{Name: "predictions",
		Steps: []Step{{ID: "checkout", Activity: Checkout.Name}}}}}
	sweep, err := BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	if co.Key != sweep.Nodes[0].Key || co.Activity != Checkout.Name || len(co.Inputs) != 0 {
		t.Errorf("checkout node %+v, the sweep's %+v", co, sweep.Nodes[0])
	}
	g, _ := toParam(grading)
	want, err := nodeKey(Grade.Name, map[string]any{"grading": g}, map[string]string{"checkout": co.Key, "patch": given})
	if err != nil || grade.Key != want || grade.Inputs["patch"] != given || grade.Inputs["checkout"] != co.Key {
		t.Errorf("grade node %+v, want key %s (%v)", grade, want, err)
	}
	if got := p.Arms[0].Steps; len(got) != 2 || got[0].Key != co.Key || got[1].Key != grade.Key {
		t.Errorf("arm steps %+v", got)
	}
	other, _ := GradePlan("predictions", "m", grading, PatchKey([]byte("")))
	same, _ := GradePlan("other", "m2", grading, given)
	if other.Nodes[1].Key == grade.Key || same.Nodes[1].Key != grade.Key || same.Nodes[0].Key != co.Key {
		t.Errorf("another patch's grade node %s, the same patch's under another arm %s; this one %s",
			other.Nodes[1].Key, same.Nodes[1].Key, grade.Key)
	}
	if PatchKey([]byte("a")) == PatchKey([]byte("b")) || PatchKey(nil) != PatchKey([]byte{}) {
		t.Error("PatchKey is not the patch's content")
	}
}
