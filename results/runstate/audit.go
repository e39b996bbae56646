package runstate

import (
	"strings"
	"time"

	"ctxlab/runlog"
	"ctxlab/store/cas"
)

// Node is a node of the sweep's plan: one activity per issue.
type Node struct {
	Key      string `json:"node"`
	Activity string `json:"activity"`
	// Steps are the "model/method.step" labels that resolved to the node.
	Steps []string `json:"steps,omitempty"`
}

// Try outcomes besides runlog's done, fail and memo.
const (
	// TryUnfinished is a start with no end: the attempt is still running, or its worker was killed.
	TryUnfinished = "unfinished"
)

// Try is one attempt of an activity: a start with its end (done or fail), a memo hit, or a start without end.
type Try struct {
	Attempt  int32     `json:"attempt"`
	Event    string    `json:"event"`
	Workflow string    `json:"workflow,omitempty"`
	Start    time.Time `json:"start"`
	// DurationMS is the attempt's run time, from its end record.
	DurationMS int64  `json:"duration_ms,omitempty"`
	Error      string `json:"error,omitempty"`
	ErrorType  string `json:"error_type,omitempty"`
	runlog.Usage
	Params cas.Ref            `json:"params,omitempty"`
	Inputs map[string]cas.Ref `json:"inputs,omitempty"`
	Output cas.Ref            `json:"output,omitempty"`
}

// Activity is everything recorded about one node on one instance.
type Activity struct {
	Instance string `json:"instance"`
	Node
	Tries []Try `json:"tries"`
	// Calls sums the node's model calls from calls.jsonl: the ledger, which also holds the calls of attempts that
	// were killed before they could record their usage.
	Calls Spend `json:"calls"`
	// CallList lists those calls, each with the refs of its request and response.
	CallList []runlog.Call `json:"call_list,omitempty"`
}

// AuditOptions choose what Audit lists.
type AuditOptions struct {
	// Instances in sweep order; nil: the instances the records name.
	Instances []string
	// Nodes of the plan in plan order; nodes the records name but the plan lacks (an earlier spec's) follow.
	Nodes []Node
	// Instance, when set, keeps one instance.
	Instance string
	// Keep, when set, keeps only these node keys.
	Keep map[string]bool
}

// Audit lists every activity (node x instance) the records name, instances in sweep order and nodes in plan
// order, each with its attempts in the order they began. Plan nodes without records are listed too (with no
// tries) for every instance that has any, so a node that never ran (skipped after a failed input, or not reached
// yet) is visible.
func Audit(r Records, o AuditOptions) []Activity {
	instances := o.Instances
	if instances == nil {
		instances = namedInstances(r)
	}
	planned := map[string]bool{}
	for _, n := range o.Nodes {
		planned[n.Key] = true
	}
	tries, extra, hasRecords := auditTries(r, planned)
	calls := map[auditKey]*Spend{}
	callList := map[auditKey][]runlog.Call{}
	for _, c := range r.Calls {
		k := auditKey{c.Instance, c.Node}
		if calls[k] == nil {
			calls[k] = &Spend{}
		}
		calls[k].Add(c)
		callList[k] = append(callList[k], c)
	}

	nodes := append(append([]Node{}, o.Nodes...), extra...)
	var out []Activity
	for _, inst := range instances {
		if (o.Instance != "" && inst != o.Instance) || !hasRecords[inst] {
			continue
		}
		for _, n := range nodes {
			if o.Keep != nil && !o.Keep[n.Key] && !o.Keep[parentKey(n.Key)] {
				continue
			}
			k := auditKey{inst, n.Key}
			if !planned[n.Key] && tries[k] == nil {
				continue
			}
			a := Activity{Instance: inst, Node: n, Tries: tries[k], CallList: callList[k]}
			if s := calls[k]; s != nil {
				a.Calls = *s
			}
			out = append(out, a)
		}
	}
	return out
}

// auditKey names one node of one instance.
type auditKey struct{ instance, node string }

// auditTries pairs the attempt records' starts with their ends into tries per node of each instance, and returns
// them with the nodes outside the plan (in order of appearance) and the instances that have records.
func auditTries(r Records, planned map[string]bool) (map[auditKey][]Try, []Node, map[string]bool) {
	tries := map[auditKey][]Try{}
	open := map[auditKey]map[[2]any]int{} // (workflow, attempt) -> index of its unfinished try
	nodeOf := map[string]Node{}
	var extra []Node
	hasRecords := map[string]bool{}
	for _, a := range r.Attempts {
		k := auditKey{a.Instance, a.Node}
		hasRecords[a.Instance] = true
		if _, seen := nodeOf[a.Node]; !seen {
			nodeOf[a.Node] = Node{Key: a.Node, Activity: a.Activity, Steps: []string{a.Step}}
			if !planned[a.Node] {
				extra = append(extra, nodeOf[a.Node])
			}
		}
		id := [2]any{a.Workflow, a.Attempt}
		switch a.Event {
		case runlog.EventStart:
			if open[k] == nil {
				open[k] = map[[2]any]int{}
			}
			open[k][id] = len(tries[k])
			tries[k] = append(tries[k], Try{Attempt: a.Attempt, Event: TryUnfinished, Workflow: a.Workflow,
				Start: a.Time})
		case runlog.EventDone, runlog.EventFail:
			i, ok := open[k][id]
			if ok {
				delete(open[k], id)
			} else { // the start record was lost (a torn line): the end alone still says what happened
				i = len(tries[k])
				tries[k] = append(tries[k], Try{Attempt: a.Attempt, Workflow: a.Workflow,
					Start: a.Time.Add(-time.Duration(a.DurationMS) * time.Millisecond)})
			}
			t := &tries[k][i]
			t.Event, t.DurationMS, t.Error, t.ErrorType = a.Event, a.DurationMS, a.Error, a.ErrorType
			t.Usage = a.Usage
			t.Params, t.Inputs, t.Output = a.Params, a.Inputs, a.Output
		case runlog.EventMemo:
			tries[k] = append(tries[k], Try{Attempt: a.Attempt, Event: runlog.EventMemo, Workflow: a.Workflow,
				Start: a.Time, Params: a.Params, Inputs: a.Inputs, Output: a.Output})
		}
	}
	return tries, extra, hasRecords
}

// parentKey is the plan node a sub-node's attempts belong to: an agent turn, recorded as "KEY.t03.model", belongs
// to node KEY (plan keys hold no dot); a plan node is its own.
func parentKey(key string) string {
	p, _, _ := strings.Cut(key, ".")
	return p
}
