package specs

import "fmt"

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

// For returns the limit of a queue kind (QueueLLM, QueueCPU, QueueGrade); unknown kinds have none.
func (q QueueLimits) For(kind string) QueueLimit {
	switch kind {
	case QueueLLM:
		return q.LLM
	case QueueCPU:
		return q.CPU
	case QueueGrade:
		return q.Grade
	}
	return QueueLimit{}
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
