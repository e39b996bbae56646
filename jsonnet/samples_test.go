package jsonnet

import (
	"os"
	"path/filepath"
	"testing"

	"ctxlab/specs"
)

// TestSamplesCompile: samples written on a library method compile, and the plan draws its k patches from one
// context: CQ2-CARE's inventory and three localization samples stay one node each, its patch becomes three nodes,
// and sample 1's is the node cq2care_patch_resample (a method asking for patch sample 1) already has.
func TestSamplesCompile(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "samples.jsonnet")
	src := `local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({ name: 'samples', dataset: ctxlab.datasets.demo, models: [ctxlab.models.offline],
  methods: [ctxlab.methods.cq2care { samples: 3 }, ctxlab.cq2care.patch_resample(ctxlab.methods.cq2care)] })
`
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := Compile(spec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Methods[0].Samples != 3 || specs.SamplesOf(e, e.Methods[1]) != 1 {
		t.Fatalf("samples %d and %d", e.Methods[0].Samples, e.Methods[1].Samples)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, n := range plan.Nodes {
		count[n.Activity]++
	}
	for act, want := range map[string]int{"checkout": 1, "inventory": 1, "localize": 3, "assemble": 1, "patch": 3,
		"grade": 3} {
		if count[act] != want {
			t.Errorf("%d %s nodes, want %d (all: %v)", count[act], act, want, count)
		}
	}
	if len(plan.Arms) != 4 {
		t.Errorf("%d arms, want 3 samples of cq2care and cq2care_patch_resample", len(plan.Arms))
	}
}
