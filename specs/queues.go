package specs

import (
	"fmt"
	"reflect"
	"slices"
)

// Task queues by kind of work, so a cluster can scale model callers, CPU work and test runs separately.
const (
	QueueLLM   = "llm"
	QueueCPU   = "cpu"
	QueueGrade = "grade"
)

// QueueKind declares one kind of task queue: what the workers that serve it and the workflows that send it work
// read. Every activity kind's Queue names one; a struct with a field per queue kind (QueueLimits, the workflows'
// Queues) names each field by the kind's name in JSON, and ForQueue reads it.
type QueueKind struct {
	Name string
	// Slots is how many activities of the kind one worker process runs at once unless a spec says otherwise
	// (limits.queues), on a machine of cpus cores.
	Slots func(cpus int) int
	// GradingTimeout: an activity's time limit is the spec's grading budget plus 10 minutes (it runs the tests),
	// rather than 30 minutes.
	GradingTimeout bool
}

// Queues are the queue kinds, in the order workers list them.
var Queues = []QueueKind{
	{Name: QueueLLM, Slots: func(int) int { return 16 }}, // model calls wait on endpoints, not on this machine
	{Name: QueueCPU, Slots: func(cpus int) int { return 2 * cpus }},
	{Name: QueueGrade, Slots: func(cpus int) int { return max(1, cpus) }, GradingTimeout: true},
}

// QueueKinds are the queue kinds' names, in the order of Queues.
var QueueKinds = func() []string {
	names := make([]string, len(Queues))
	for i, q := range Queues {
		names[i] = q.Name
	}
	return names
}()

// QueueOf is the declaration of the queue kind named name; a name no declaration has is an error, never a default.
func QueueOf(name string) (QueueKind, error) {
	i := slices.IndexFunc(Queues, func(q QueueKind) bool { return q.Name == name })
	if i < 0 {
		return QueueKind{}, fmt.Errorf("queue kind %q is none of %v", name, QueueKinds)
	}
	return Queues[i], nil
}

// ForQueue is the field of perKind, a struct with one field of type V per queue kind, that the kind's name names
// in JSON: an unknown kind, or one the struct has no field for, is an error.
func ForQueue[V any](perKind any, kind string) (V, error) {
	var zero V
	if _, err := QueueOf(kind); err != nil {
		return zero, err
	}
	v := reflect.ValueOf(perKind)
	f, ok := JSONFields(v.Type())[kind]
	if !ok {
		return zero, fmt.Errorf("%s has no field for queue kind %q", v.Type(), kind)
	}
	out, ok := v.FieldByName(f.Name).Interface().(V)
	if !ok {
		return zero, fmt.Errorf("%s's field for queue kind %q is a %s", v.Type(), kind, f.Type)
	}
	return out, nil
}

// QueueLimits bound each kind of task queue. A zero field keeps the worker's default.
type QueueLimits struct {
	LLM   QueueLimit `json:"llm,omitzero"`
	CPU   QueueLimit `json:"cpu,omitzero"`
	Grade QueueLimit `json:"grade,omitzero"`
}

// QueueLimit bounds one task queue.
type QueueLimit struct {
	// Concurrency is the number of activities of this kind one worker process runs at once.
	Concurrency int `json:"concurrency,omitempty"`
	// Rate is the number of activities of this kind started per second across the whole cluster (Temporal enforces
	// it on the task queue, whichever worker polls); 0 means unlimited.
	Rate float64 `json:"rate,omitempty"`
}

// For returns the limit of a queue kind; an unknown kind has none (the workers refuse to serve one: wiring.Start).
func (q QueueLimits) For(kind string) QueueLimit {
	l, _ := ForQueue[QueueLimit](q, kind)
	return l
}

// validateQueues checks limits.queues: negative concurrency or rate cannot be meant.
func validateQueues(q QueueLimits) []*ValidationError {
	var errs []*ValidationError
	for _, kind := range QueueKinds {
		l := q.For(kind)
		p := "limits.queues." + kind
		if l.Concurrency < 0 {
			errs = append(errs, &ValidationError{Path: p + ".concurrency",
				Msg: fmt.Sprintf("concurrency %d must not be negative (0 keeps the worker's default)", l.Concurrency)})
		}
		if l.Rate < 0 {
			errs = append(errs, &ValidationError{Path: p + ".rate",
				Msg: fmt.Sprintf("rate %g must not be negative (0 means unlimited)", l.Rate)})
		}
	}
	return errs
}

// RunsLocally reports whether the workflow worker runs a node in process (a Temporal local activity: one round trip
// fewer, no task queue) rather than on its kind's queue: a Cheap activity, or a step that calls no endpoint (the
// offline model, the fake compressor: no rate to respect, no money at stake). Which nodes it picks shapes the
// Issue workflow's history: changing it changes replay (workflows' localChange).
func RunsLocally(n Node) bool {
	info, ok := Catalog[n.Activity]
	if !ok {
		return false
	}
	return info.Cheap || info.NoEndpoint != nil && info.NoEndpoint(n.Params)
}
