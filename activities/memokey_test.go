package activities

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// memoKeysBefore are the node memo keys of one fixed input under every activity name a node runs as, computed by
// the adapter before the kinds declared their code versions (when it kept them by the literal names "grade" and
// "measure"; measure's since moved on with its code version). A changed key runs finished nodes again, and pays for
// their model calls again.
var memoKeysBefore = map[string]string{
	"agent":            unversioned,
	"agent_context":    unversioned,
	"agent_finish":     unversioned,
	"agent_model_turn": unversioned,
	"agent_patch":      unversioned,
	"agent_tool_turn":  unversioned,
	"assemble":         unversioned,
	"checkout":         unversioned,
	"compress":         unversioned,
	"corrupt":          unversioned,
	"evidence":         unversioned,
	"grade":            "99f182459a0aac2898d223f3a08aa4b3414b958297763aa649b435464651cab3",
	"intersect":        unversioned,
	"inventory":        unversioned,
	"listwise_rerank":  unversioned,
	"localize":         unversioned,
	// ctxlab-measure-v3 (the line-level truth): finished measures run again, which calls no model.
	"measure":      "960e6078fd3b230086538819a1b2315f875df917c5f002e2b34df93ec76befb0",
	"no_source":    unversioned,
	"oracle_files": unversioned,
	"patch":        unversioned,
	"retrieve":     unversioned,
	"trim":         unversioned,
}

// unversioned is the key of a kind without a code version: the key names the node, not its activity.
const unversioned = "d0ac04cb6f273158cdc45e297d72bb6dc03f319342f2121fdfcac55a80ab7210"

// TestMemoKeysUnchanged: every kind's node memo key is what it was before code versions were declared with the
// kinds, byte for byte; only grade and measure have a version in theirs.
func TestMemoKeysUnchanged(t *testing.T) {
	in := api.NodeInput{Run: "r", Instance: api.InstanceRef{ID: "acme__x-1", Ref: cas.Ref("sha256:0123")},
		Node: "n0", Step: "m.s", Params: map[string]any{"unit": "file", "rate": 0.5},
		Inputs:  map[string]api.NodeOutput{"checkout": {Ref: "sha256:abc", Row: map[string]any{"repo_files": 3.0}}},
		Dataset: specs.Dataset{Repos: "{dataset_dir}/repos/{repo}"}}
	names := append(specs.ActivityNames(), api.AgentModelTurnName, api.AgentToolTurnName, api.AgentFinishName)
	got := map[string]string{}
	for _, name := range names {
		key, err := memoKey(name, in)
		if err != nil {
			t.Fatal(err)
		}
		got[name] = key
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range got {
			if !yield(n) {
				return
			}
		}
	}) {
		if want, ok := memoKeysBefore[name]; !ok {
			t.Errorf("%s: no key recorded before (a new kind: add its key)", name)
		} else if got[name] != want {
			t.Errorf("%s: memo key %s, was %s", name, got[name], want)
		}
	}
}

// TestLoadPlanRefusesUndeclaredKinds: a plan node of a kind this build does not declare fails the plan's loading,
// naming the node, instead of the Issue workflow sending it to a queue nothing of its kind polls.
func TestLoadPlanRefusesUndeclaredKinds(t *testing.T) {
	a := New(t.TempDir(), zerolog.Nop())
	store, err := a.Store("r")
	if err != nil {
		t.Fatal(err)
	}
	load := func(p specs.Plan) error {
		ref, err := cas.PutJSON(context.Background(), store, p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.LoadPlan(context.Background(), api.LoadPlanInput{Run: "r", Plan: ref})
		return err
	}
	if err := load(specs.Plan{Nodes: []specs.Node{{Key: "checkout", Activity: "checkout"}}}); err != nil {
		t.Fatal(err)
	}
	err = load(specs.Plan{Nodes: []specs.Node{{Key: "checkout", Activity: "checkout"}, {Key: "r0", Activity: "rerank"}}})
	if err == nil || !strings.Contains(err.Error(), `node r0 is of activity "rerank", which this build does not declare`) {
		t.Errorf("plan with an undeclared kind: %v", err)
	}
}
