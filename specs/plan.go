package specs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Plan is every (model, method) arm of an experiment merged into one DAG of nodes. Two steps with the same
// activity, parameters and inputs are one node, so work shared between methods runs once per issue.
type Plan struct {
	// Nodes are in an order where every node comes after its inputs.
	Nodes []Node `json:"nodes"`
	Arms  []Arm  `json:"arms"`
	// Format says what the plan's fields mean: PlanFormatBorrowed and later plans mark borrowed arm steps
	// (ArmStep.Borrowed); older plans (0) leave them to be told by a "." in the step id.
	Format int `json:"format,omitempty"`
}

// PlanFormatBorrowed is the first plan format whose arm steps carry ArmStep.Borrowed.
const PlanFormatBorrowed = 1

// Node is one unit of work per issue.
type Node struct {
	// Key is a hash of the activity, parameters and input keys.
	Key      string            `json:"key"`
	Activity string            `json:"activity"`
	Params   map[string]any    `json:"params,omitempty"`
	Inputs   map[string]string `json:"inputs,omitempty"` // input name -> node key
	// Steps names every "model/method.step" that resolved to this node.
	Steps []string `json:"steps"`
}

// Arm is one method under one model: one results row per issue.
type Arm struct {
	Method string    `json:"method"`
	Model  string    `json:"model"`
	Steps  []ArmStep `json:"steps"`
	// Samples is how many patch samples the method draws (SamplesOf), and Sample which one this arm is (0 to
	// Samples-1); both are omitted for a method of one sample, whose rows carry no sample index.
	Samples int `json:"samples,omitempty"`
	Sample  int `json:"sample,omitempty"`
}

// ArmStep maps a method's step to its node.
type ArmStep struct {
	ID  string `json:"id"`
	Key string `json:"key"`
	// Borrowed copies Step.Borrowed: the step is another method's, and adds nothing to this arm's row.
	Borrowed bool `json:"borrowed,omitempty"`
}

// Label names a step of an arm in messages: "model/method.step", or "method.step" when there is one model.
func Label(model, method, step string, models int) string {
	if models > 1 {
		return model + "/" + method + "." + step
	}
	return method + "." + step
}

// BuildPlan merges the arms of a validated experiment.
func BuildPlan(e *Experiment) (*Plan, error) {
	b := newPlanBuilder()
	grading, err := toParam(e.Grading)
	if err != nil {
		return nil, err
	}
	for _, m := range e.Models {
		modelParam, err := toParam(m)
		if err != nil {
			return nil, err
		}
		in := injected{model: modelParam, tokenizer: ResolveTokenizer(e, m), grading: grading}
		for _, method := range e.Methods {
			order, err := TopoOrder(method)
			if err != nil {
				return nil, err
			}
			k := SamplesOf(e, method)
			for sample := range k {
				name := method.Name
				if sample > 0 {
					name += "#" + strconv.Itoa(sample)
				}
				if err := b.addArm(name, m.Name, len(e.Models), sampled(order, sample), in, nil); err != nil {
					return nil, err
				}
				if k > 1 {
					arm := &b.plan.Arms[len(b.plan.Arms)-1]
					arm.Method, arm.Samples, arm.Sample = method.Name, k, sample
				}
			}
		}
	}
	return b.plan, nil
}

// sampled is a method's steps as its patch sample number sample draws them: the patch step's sample param raised by
// sample, so that its node (its memo, its response cache key and its seed) is the sample's own and every node that
// reads the patch follows it, while the steps above the patch keep their nodes. Sample 0 is the steps as declared:
// the first sample of k is the node a method of one sample has.
func sampled(order []Step, sample int) []Step {
	if sample == 0 {
		return order
	}
	out := slices.Clone(order)
	for i, s := range out {
		if s.Activity != Patch.Name {
			continue
		}
		params := maps.Clone(s.Params)
		if params == nil {
			params = map[string]any{}
		}
		base := 0.0
		switch v := params["sample"].(type) {
		case float64:
			base = v
		case int:
			base = float64(v)
		}
		params["sample"] = base + float64(sample)
		out[i].Params = params
	}
	return out
}

// GivenPatch is the step id the patch input of a grade plan's grade step names: the patch to grade, given rather
// than computed by a step (GradePlan).
const GivenPatch = "patch"

// PatchKey is the key a given patch stands under in a grade plan: its bytes' digest, in node keys' encoding, so
// that grade nodes of different patches differ and those of one patch are one.
func PatchKey(patch []byte) string {
	sum := sha256.Sum256(patch)
	key, _ := nodeKey(GivenPatch, map[string]any{"sha256": hex.EncodeToString(sum[:])}, nil)
	return key
}

// GradePlan is the plan of grading a given patch as a sweep grades one (starter grade), in one arm (method, model):
// a checkout node and a grade node whose patch input is the patch under patchKey (PatchKey), the grading settings
// injected as BuildPlan injects them. Its nodes are keyed as a sweep's are: its checkout node is a sweep's.
func GradePlan(method, model string, grading Grading, patchKey string) (*Plan, error) {
	g, err := toParam(grading)
	if err != nil {
		return nil, err
	}
	steps := []Step{{ID: Checkout.Name, Activity: Checkout.Name},
		{ID: Grade.Name, Activity: Grade.Name, Inputs: map[string]string{"checkout": Checkout.Name, "patch": GivenPatch}}}
	b := newPlanBuilder()
	err = b.addArm(method, model, 1, steps, injected{grading: g}, map[string]string{GivenPatch: patchKey})
	return b.plan, err
}

// planBuilder merges arms into a plan: steps with the same activity, parameters and input keys are one node.
type planBuilder struct {
	plan  *Plan
	index map[string]int // node key -> its place in plan.Nodes
}

func newPlanBuilder() *planBuilder {
	return &planBuilder{plan: &Plan{Format: PlanFormatBorrowed}, index: map[string]int{}}
}

// injected are the parameters a plan gives the steps whose kinds use them (UsesModel, UsesTokenizer, UsesGrading),
// in their JSON form; a step that sets one itself keeps its own.
type injected struct{ model, tokenizer, grading any }

func (in injected) params(s Step) map[string]any {
	info := Catalog[s.Activity]
	params := map[string]any{}
	for k, v := range s.Params {
		params[k] = v
	}
	for _, p := range []struct {
		uses  bool
		name  string
		value any
	}{{info.UsesModel, "model", in.model}, {info.UsesTokenizer, "tokenizer", in.tokenizer},
		{info.UsesGrading, "grading", in.grading}} {
		if _, set := params[p.name]; p.uses && !set {
			params[p.name] = p.value
		}
	}
	return params
}

// addArm adds the arm of method under model (models: how many the labels tell apart), whose steps come in order
// (each after its inputs), to the plan. given are the keys of inputs no step computes, by the id the steps name.
func (b *planBuilder) addArm(method, model string, models int, order []Step, in injected,
	given map[string]string) error {
	keys := map[string]string{}
	for id, key := range given {
		keys[id] = key
	}
	arm := Arm{Method: method, Model: model}
	for _, s := range order {
		params := in.params(s)
		inputs := map[string]string{}
		for name, from := range s.Inputs {
			inputs[name] = keys[from]
		}
		key, err := nodeKey(s.Activity, params, inputs)
		if err != nil {
			return fmt.Errorf("method %s step %s: %w", method, s.ID, err)
		}
		keys[s.ID] = key
		label := Label(model, method, s.ID, models)
		if i, ok := b.index[key]; ok {
			b.plan.Nodes[i].Steps = append(b.plan.Nodes[i].Steps, label)
		} else {
			b.index[key] = len(b.plan.Nodes)
			b.plan.Nodes = append(b.plan.Nodes, Node{Key: key, Activity: s.Activity, Params: params, Inputs: inputs,
				Steps: []string{label}})
		}
		arm.Steps = append(arm.Steps, ArmStep{ID: s.ID, Key: key, Borrowed: s.Borrowed})
	}
	b.plan.Arms = append(b.plan.Arms, arm)
	return nil
}

// TopoOrder returns the method's steps so that every step follows its inputs, keeping declaration order where it
// can. A cycle is an error naming its steps.
func TopoOrder(m Method) ([]Step, error) {
	byID := map[string]int{}
	for i, s := range m.Steps {
		byID[s.ID] = i
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := make([]int, len(m.Steps))
	var order []Step
	var stack []string
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case done:
			return nil
		case visiting:
			start := 0
			for j, id := range stack {
				if id == m.Steps[i].ID {
					start = j
				}
			}
			cycle := append(append([]string{}, stack[start:]...), m.Steps[i].ID)
			return &CycleError{Method: m.Name, Steps: cycle}
		}
		state[i] = visiting
		stack = append(stack, m.Steps[i].ID)
		for _, name := range slices.Sorted(maps.Keys(m.Steps[i].Inputs)) {
			from := m.Steps[i].Inputs[name]
			j, ok := byID[from]
			if !ok {
				return fmt.Errorf("method %s: step %s: input %s names missing step %q", m.Name, m.Steps[i].ID, name, from)
			}
			if err := visit(j); err != nil {
				return err
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
		order = append(order, m.Steps[i])
		return nil
	}
	for i := range m.Steps {
		if err := visit(i); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// CycleError names the steps of a cycle, first step repeated at the end.
type CycleError struct {
	Method string
	Steps  []string
}

func (e *CycleError) Error() string {
	s := ""
	for i, id := range e.Steps {
		if i > 0 {
			s += " -> "
		}
		s += id
	}
	return fmt.Sprintf("method %s: steps form a cycle: %s", e.Method, s)
}

func nodeKey(activity string, params map[string]any, inputs map[string]string) (string, error) {
	// encoding/json sorts map keys, so equal content gives equal bytes.
	b, err := json.Marshal(struct {
		Activity string            `json:"a"`
		Params   map[string]any    `json:"p"`
		Inputs   map[string]string `json:"i"`
	}{activity, params, inputs})
	if err != nil {
		return "", fmt.Errorf("parameters are not JSON: %w", err)
	}
	sum := sha256.Sum256(b)
	return activity + "-" + hex.EncodeToString(sum[:])[:16], nil
}

// toParam turns a value into the generic JSON form parameters hold, so keys do not depend on Go types.
func toParam(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}
