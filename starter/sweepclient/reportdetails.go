package sweepclient

import (
	"context"
	"encoding/json"
	"fmt"

	"ctxlab/activities/contexts"
	"ctxlab/results"
	"ctxlab/results/report"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/store/objects"
)

// maxProblems bounds how many unreadable objects report.html's problems list names one by one.
const maxProblems = 5

// reportDetails reads, for every row of the report, the context its method's measure step read (its files), the
// patch, and the grade step's test log: the plan of the recorded spec names each arm's nodes, and the run's node
// records name the stored objects.
func reportDetails(ctx context.Context, objs objects.Store, store cas.Store, e *specs.Experiment, rep *report.Report) (map[results.Key]report.Detail, []string) {
	if e == nil {
		return nil, []string{"no spec recorded in the run folder: no drill-down into stored objects"}
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		return nil, []string{fmt.Sprintf("the recorded spec: %v", err)}
	}
	arms := armNodesOf(plan)
	details := map[results.Key]report.Detail{}
	r := &detailReader{ctx: ctx, objs: objs, store: store}
	for _, row := range rep.CountedRows() {
		id := row.Key()
		an, ok := arms[results.Key{Method: id.Method, Model: id.Model, Sample: id.Sample}]
		if !ok {
			continue // a method of an earlier spec
		}
		if d := r.detail(row, an); d.ContextRef != "" || d.PatchRef != "" || d.TestLogRef != "" {
			details[id] = d
		}
	}
	if r.unread > maxProblems {
		r.problems = append(r.problems, fmt.Sprintf("and %d more objects could not be read", r.unread-maxProblems))
	}
	return details, r.problems
}

// detailReader reads the stored objects behind report rows, counting those it could not read and naming the first
// maxProblems.
type detailReader struct {
	ctx      context.Context
	objs     objects.Store // the run's memos
	store    cas.Store
	unread   int
	problems []string
}

func (r *detailReader) note(d *report.Detail, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.Problems = append(d.Problems, msg)
	if r.unread++; r.unread <= maxProblems {
		r.problems = append(r.problems, msg)
	}
}

func (r *detailReader) get(d *report.Detail, what string, ref cas.Ref) []byte {
	b, err := r.store.Get(r.ctx, ref)
	if err != nil {
		r.note(d, "%s %s: %v", what, ref, err)
	}
	return b
}

// detail is a row's context (its files), patch and test log, from the memos of its arm's nodes.
func (r *detailReader) detail(row results.Row, an armNodes) report.Detail {
	var d report.Detail
	refs := an.refs(r.ctx, r.objs, row)
	if refs.context != "" {
		d.ContextRef = string(refs.context)
		var c contexts.Context
		if b := r.get(&d, "context", refs.context); b != nil {
			if err := json.Unmarshal(b, &c); err != nil {
				r.note(&d, "context %s: %v", refs.context, err)
			}
			d.ContextFiles = c.Files()
		}
	}
	if refs.patch != "" {
		d.PatchRef = string(refs.patch)
		d.Patch = string(r.get(&d, "patch", refs.patch))
	}
	if refs.testOutput != "" {
		d.TestLogRef = string(refs.testOutput)
		d.TestLog = string(r.get(&d, "test log", refs.testOutput))
	}
	return d
}
