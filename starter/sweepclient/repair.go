package sweepclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"ctxlab/activities"
	"ctxlab/activities/api"
	"ctxlab/dataset/swebench"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/store/objects"
	"ctxlab/workflows"
)

// resultsRepair says what repairResults changed in a run folder.
type resultsRepair struct {
	runfolder.Repaired
	// Restored counts rows re-derived from the memoized node outputs.
	Restored int
	// FromHistory counts rows taken from the Record activity in an Issue workflow's history.
	FromHistory int
}

func (r resultsRepair) changed() bool {
	return r.Repaired.Changed() || r.Restored > 0 || r.FromHistory > 0
}

// messages describes the repair for people, one line each; none when nothing changed.
func (r resultsRepair) messages() []string {
	var out []string
	if r.Repaired.Changed() {
		out = append(out, r.Repaired.String())
	}
	if r.Restored > 0 {
		out = append(out, fmt.Sprintf("re-derived %d row(s) missing from results.jsonl from the stored node outputs",
			r.Restored))
	}
	if r.FromHistory > 0 {
		out = append(out, fmt.Sprintf("re-derived %d row(s) missing from results.jsonl from the rows their Issue "+
			"workflows recorded", r.FromHistory))
	}
	return out
}

// repairResults makes runDir's results.jsonl whole again after a process was killed mid-append: it cuts the torn
// line out (results.Store.Repair) and re-derives, from the node outputs memoized under runDir/nodes, every row of
// the plan that the file lacks although all its steps succeeded, exactly as the Issue workflow builds it. Rows whose
// steps failed or have not run are left to the sweep. Append writes each key once, so a workflow recording the same
// row later adds nothing. With a nil plan it only cuts the torn line. Only outputs memoized under the instances'
// present content count (activities.MemoizedOutputs): a memo of an edited row, or of a dataset that is gone, is not
// this sweep's.
func repairResults(ctx context.Context, runDir string, objs objects.Store, plan *specs.Plan, dataset specs.Dataset,
	instances []swebench.Instance) (resultsRepair, error) {
	var rep resultsRepair
	store := results.Store{Path: runfolder.Rows(runDir)}
	var err error
	if rep.Repaired, err = store.Repair(); err != nil {
		return rep, err
	}
	if plan == nil {
		return rep, nil
	}
	rows, _, err := results.ReadFile(store.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	have := map[results.Key]bool{}
	for _, r := range rows {
		have[r.Key()] = true
	}
	var restored []results.Row
	for _, inst := range instances {
		id := inst.InstanceID
		var outputs map[string]api.NodeOutput
		for _, arm := range plan.Arms {
			if have[results.Key{Instance: id, Method: arm.Method, Model: arm.Model, Sample: arm.Sample}] {
				continue
			}
			if outputs == nil {
				b, err := json.Marshal(inst) // the row's reference as LoadDataset stores it
				if err != nil {
					return rep, err
				}
				outputs = activities.MemoizedOutputs(ctx, objs, *plan,
					api.InstanceRef{ID: id, Ref: cas.RefOf(b)}, dataset)
			}
			if row, ok := workflows.ArmRow(id, *plan, arm, outputs); ok {
				restored = append(restored, row)
			}
		}
	}
	if len(restored) > 0 {
		if rep.Restored, err = store.Append(restored); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// RepairRunFolder repairs the results of the run folder dir as its recorded spec describes it (the plan, and the
// dataset's instances, or when the dataset is gone the instances its attempts name), and tells the user on stderr
// what it changed. A results file outside a run folder, or one whose dataset is gone, only has its torn line cut.
func RepairRunFolder(cmd, dir, file string, stderr io.Writer) {
	var sh SweepShape
	if file == runfolder.Rows(dir) {
		sh = ReadShape(dir)
	}
	var rep resultsRepair
	var err error
	if sh.Plan != nil {
		rep, err = repairResults(context.Background(), dir, objects.Dir{Root: dir}, sh.Plan, sh.Dataset, sh.Rows)
	} else {
		rep.Repaired, err = results.Store{Path: file}.Repair()
	}
	if err != nil {
		fmt.Fprintf(stderr, "starter %s: repairing %s: %v\n", cmd, file, err)
		return
	}
	for _, m := range rep.messages() {
		fmt.Fprintf(stderr, "starter %s: %s: %s\n", cmd, file, m)
	}
}

// repairAtStart repairs a run's results when its sweep has been started or attached to, so a finished sweep shows
// every row: it cuts a torn line, re-derives lost rows from the node outputs, and, when the sweep has finished,
// takes lost rows that no node output gives (rows of failed steps) from the Record activity in their Issue
// workflow's history. When rows came
// back it writes summary.md again. A repair that fails is logged: the sweep still runs.
func repairAtStart(ctx context.Context, c client.Client, acts *activities.Activities, name string, plan *specs.Plan,
	planRef cas.Ref, dataset specs.Dataset, instances []swebench.Instance, log zerolog.Logger) {
	ids := make([]string, len(instances))
	for i, in := range instances {
		ids[i] = in.InstanceID
	}
	runDir := acts.RunDir(name)
	objs, err := acts.Objects(name)
	if err != nil {
		log.Warn().Err(err).Msg("could not repair results.jsonl")
		return
	}
	rep, err := repairResults(ctx, runDir, objs, plan, dataset, instances)
	if err != nil {
		log.Warn().Err(err).Msg("could not repair results.jsonl")
		return
	}
	// Only a finished sweep's histories are final; a running sweep records its rows itself (and may be re-running
	// some on purpose).
	if c != nil && sweepFinished(ctx, c, "sweep/"+name) {
		n, err := restoreRecordedRows(ctx, c, acts, name, plan, planRef, ids)
		if err != nil {
			log.Warn().Err(err).Msg("could not take lost rows from the Issue workflows' histories")
		}
		rep.FromHistory = n
	}
	for _, m := range rep.messages() {
		log.Warn().Msg(m)
	}
	if rep.changed() {
		in := sweepInput(&specs.Experiment{Name: name}, plan, "", 0)
		if _, err := acts.Summarize(ctx, api.SummarizeInput{Run: name, Title: in.Title, Order: in.Order}); err != nil {
			log.Warn().Err(err).Msg("could not write summary.md again")
		}
	}
}

// sweepFinished reports whether the sweep workflow id has completed.
func sweepFinished(ctx context.Context, c client.Client, id string) bool {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	return err == nil &&
		desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
}

// restoreRecordedRows appends the rows results.jsonl lacks that an Issue workflow of this plan recorded: those it
// stored in the run's content store, which the finished sweep lists, or for an Issue from before, the input of its
// Record activity in its history, exactly as it was written. It asks only about instances that show they ran (rows
// of other arms, or attempts), and only histories of an Issue started with the same plan.
func restoreRecordedRows(ctx context.Context, c client.Client, acts *activities.Activities, run string,
	plan *specs.Plan, planRef cas.Ref, instances []string) (int, error) {
	runDir := acts.RunDir(run)
	store := results.Store{Path: runfolder.Rows(runDir)}
	stored, err := storedRowsOf(ctx, c, acts, run)
	if err != nil {
		return 0, err
	}
	rows, _, err := results.ReadFile(store.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	have := map[results.Key]bool{}
	ran := map[string]bool{}
	for _, r := range rows {
		have[r.Key()] = true
		ran[r.String(results.FieldInstance)] = true
	}
	attempts, _, _ := runlog.Read[runlog.Attempt](runfolder.Attempts(runDir))
	for _, a := range attempts {
		ran[a.Instance] = true
	}
	var restored []results.Row
	for _, id := range instances {
		missing := map[results.Key]bool{}
		for _, arm := range plan.Arms {
			if k := (results.Key{Instance: id, Method: arm.Method, Model: arm.Model, Sample: arm.Sample}); !have[k] {
				missing[k] = true
			}
		}
		if len(missing) == 0 || (!ran[id] && stored[id] == nil) {
			continue
		}
		recorded := stored[id]
		if recorded == nil {
			if recorded, err = recordedRows(ctx, c, workflows.IssueWorkflowID(run, id), planRef); err != nil {
				return 0, fmt.Errorf("instance %s: %w", id, err)
			}
		}
		for _, r := range recorded {
			if missing[r.Key()] {
				restored = append(restored, r)
			}
		}
	}
	if len(restored) == 0 {
		return 0, nil
	}
	return store.Append(restored)
}

// storedRowsOf reads the rows of every issue of the run's finished sweep that stored them (SweepResult.Rows), by
// instance.
func storedRowsOf(ctx context.Context, c client.Client, acts *activities.Activities, run string) (
	map[string][]results.Row, error) {
	var res workflows.SweepResult
	if err := c.GetWorkflow(ctx, "sweep/"+run, "").Get(ctx, &res); err != nil || len(res.Rows) == 0 {
		return nil, nil // a sweep that ended otherwise, or from before the rows came back through it
	}
	store, err := acts.Store(run)
	if err != nil {
		return nil, err
	}
	out := map[string][]results.Row{}
	for _, s := range res.Rows {
		var rows []results.Row
		if err := cas.GetJSON(ctx, store, s.Rows, &rows); err != nil {
			return nil, fmt.Errorf("the rows of instance %s: %w", s.Instance, err)
		}
		out[s.Instance] = rows
	}
	return out, nil
}

// recordedRows returns the rows an Issue workflow recorded (nil when it has not recorded them, has no history, or
// was started with another plan).
func recordedRows(ctx context.Context, c client.Client, id string, planRef cas.Ref) ([]results.Row, error) {
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	dc := converter.GetDefaultDataConverter()
	for it.HasNext() {
		ev, err := it.Next()
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		if st := ev.GetWorkflowExecutionStartedEventAttributes(); st != nil {
			var in workflows.IssueInput
			if err := dc.FromPayloads(st.GetInput(), &in); err != nil || in.Plan != planRef {
				return nil, nil
			}
		}
		if sch := ev.GetActivityTaskScheduledEventAttributes(); sch != nil &&
			sch.GetActivityType().GetName() == api.RecordName {
			var rec api.RecordInput
			if err := dc.FromPayloads(sch.GetInput(), &rec); err != nil {
				return nil, fmt.Errorf("history of %s: the rows it recorded: %w", id, err)
			}
			return rec.Rows, nil
		}
	}
	return nil, nil
}
