package specs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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
	p := &Plan{Format: PlanFormatBorrowed}
	index := map[string]int{}
	grading, err := toParam(e.Grading)
	if err != nil {
		return nil, err
	}
	for _, m := range e.Models {
		modelParam, err := toParam(m)
		if err != nil {
			return nil, err
		}
		tokenizer := ResolveTokenizer(e, m)
		for _, method := range e.Methods {
			order, err := TopoOrder(method)
			if err != nil {
				return nil, err
			}
			keys := map[string]string{}
			arm := Arm{Method: method.Name, Model: m.Name}
			for _, s := range order {
				info := Catalog[s.Activity]
				params := map[string]any{}
				for k, v := range s.Params {
					params[k] = v
				}
				if info.UsesModel {
					if _, set := params["model"]; !set {
						params["model"] = modelParam
					}
				}
				if info.UsesTokenizer {
					if _, set := params["tokenizer"]; !set {
						params["tokenizer"] = tokenizer
					}
				}
				if info.UsesGrading {
					if _, set := params["grading"]; !set {
						params["grading"] = grading
					}
				}
				inputs := map[string]string{}
				for name, from := range s.Inputs {
					inputs[name] = keys[from]
				}
				key, err := nodeKey(s.Activity, params, inputs)
				if err != nil {
					return nil, fmt.Errorf("method %s step %s: %w", method.Name, s.ID, err)
				}
				keys[s.ID] = key
				label := Label(m.Name, method.Name, s.ID, len(e.Models))
				if i, ok := index[key]; ok {
					p.Nodes[i].Steps = append(p.Nodes[i].Steps, label)
				} else {
					index[key] = len(p.Nodes)
					p.Nodes = append(p.Nodes, Node{Key: key, Activity: s.Activity, Params: params, Inputs: inputs,
						Steps: []string{label}})
				}
				arm.Steps = append(arm.Steps, ArmStep{ID: s.ID, Key: key, Borrowed: s.Borrowed})
			}
			p.Arms = append(p.Arms, arm)
		}
	}
	return p, nil
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
