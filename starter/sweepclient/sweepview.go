package sweepclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"ctxlab/activities/api"
	"ctxlab/internal/cluster"
	"ctxlab/results/runstate"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
	"ctxlab/workflows"
)

// sweepView is what the Temporal server holds of a run's sweep: its state, and the shape (instances and arms) its
// input names, for status and report on a machine other than the starter's, which has no run folder of its own.
type sweepView struct {
	ID      string `json:"workflow"`
	Address string `json:"address"`
	// State is the sweep workflow's status: running, completed, failed, terminated, ...
	State string `json:"state"`
	// Note says what could not be read (a running sweep whose workflow worker does not answer queries).
	Note      string `json:"note,omitempty"`
	instances []string
	arms      []runstate.Arm
}

// readSweep writes into the run folder dir the rows the sweep of run name stored, as the starter that watches it
// does: their references from the Temporal server co names (the rows query of a running sweep, the result of a
// finished one), the rows from the store setting names (the run folder's own cas/ when it is no URL). results.jsonl
// of dir then holds what the starter's holds, on any machine.
func readSweep(ctx context.Context, co cluster.Options, setting, name, dir string) (*sweepView, error) {
	c, err := cluster.Dial(ctx, co, zerolog.Nop())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	v := &sweepView{ID: "sweep/" + name, Address: co.Address}
	desc, err := c.DescribeWorkflowExecution(ctx, v.ID, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil, fmt.Errorf("the Temporal server at %s (namespace %s) has no sweep %s", co.Address, co.Namespace, v.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("looking up %s at %s: %w", v.ID, co.Address, err)
	}
	status := desc.GetWorkflowExecutionInfo().GetStatus()
	v.State = strings.ToLower(strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_"))
	in, err := startedInput(ctx, c, v.ID)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	store, err := bucket.Open(ctx, setting, name, runfolder.CAS(dir))
	if err != nil {
		return nil, err
	}
	stored, err := v.storedRows(ctx, c, status, in)
	if err != nil {
		return nil, err
	}
	if _, err := newRowCollector(c, v.ID, store, dir).write(ctx, stored); err != nil {
		return nil, fmt.Errorf("%w (give --store the sweep's store, as its workers had it)", err)
	}
	var plan specs.Plan
	if err := cas.GetJSON(ctx, store, in.Plan, &plan); err == nil {
		for _, a := range plan.Arms {
			v.arms = append(v.arms, runstate.Arm{Method: a.Method, Model: a.Model})
		}
	}
	if len(in.Retry) == 0 { // a retry's input names only the issues it runs again
		for _, i := range in.Instances {
			v.instances = append(v.instances, i.ID)
		}
	}
	return v, nil
}

// storedRows lists where the sweep's finished issues stored their rows: a finished sweep's result, a running
// sweep's answer to the rows query (or, when its workflow worker does not answer, what its current run was started
// with), a sweep that ended otherwise what its last run was started with.
func (v *sweepView) storedRows(ctx context.Context, c client.Client, status enumspb.WorkflowExecutionStatus,
	in workflows.SweepInput) ([]api.IssueRows, error) {
	switch status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		var res workflows.SweepResult
		if err := c.GetWorkflow(ctx, v.ID, "").Get(ctx, &res); err != nil {
			return nil, fmt.Errorf("the result of %s: %w", v.ID, err)
		}
		return res.Rows, nil
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		val, err := c.QueryWorkflow(qctx, v.ID, "", workflows.RowsQuery, 0)
		var live []api.IssueRows
		if err == nil {
			err = val.Get(&live)
		}
		if err == nil {
			return live, nil
		}
		v.Note = fmt.Sprintf("the sweep's workflow worker did not answer (%v): rows as of its last "+
			"continue-as-new", err)
	}
	return in.Stored, nil
}

// startedInput is the input of the sweep's current run (it carries the position of a continued one).
func startedInput(ctx context.Context, c client.Client, id string) (workflows.SweepInput, error) {
	var in workflows.SweepInput
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return in, fmt.Errorf("%s has no history", id)
	}
	ev, err := it.Next()
	if err != nil {
		return in, fmt.Errorf("history of %s: %w", id, err)
	}
	st := ev.GetWorkflowExecutionStartedEventAttributes()
	if st == nil {
		return in, fmt.Errorf("history of %s does not begin with its start", id)
	}
	if err := converter.GetDefaultDataConverter().FromPayloads(st.GetInput(), &in); err != nil {
		return in, fmt.Errorf("the input of %s: %w", id, err)
	}
	return in, nil
}

// shape returns the instances and arms whose rows status counts, and a note on what is missing: those the sweep's
// input names, else the run folder's (sh).
func (v *sweepView) shape(sh SweepShape) (instances []string, arms []runstate.Arm, note string) {
	instances, arms, note = sh.Instances, sh.Arms(), sh.Note
	if v == nil {
		return instances, arms, note
	}
	if v.instances != nil {
		instances = v.instances
	}
	if v.arms != nil {
		arms, note = v.arms, ""
	}
	return instances, arms, note
}
