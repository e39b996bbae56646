package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"ctxlab/activities/api"
	"ctxlab/dataset/swebench"
	"ctxlab/internal/regularfile"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// LoadDataset reads and validates the dataset, stores each row in the content store and returns references in
// dataset order (filtered by the spec's instances and limit).
func (a *Activities) LoadDataset(ctx context.Context, in api.LoadDatasetInput) ([]api.InstanceRef, error) {
	defer a.heartbeat(ctx)()
	store, err := a.Store(in.Run)
	if err != nil {
		return nil, err
	}
	rows, err := swebench.ReadFile(in.Dataset.File)
	if err != nil {
		return nil, permanentError(api.ErrBadInput, err)
	}
	rows, err = Select(rows, in.Dataset)
	if err != nil {
		return nil, permanentError(api.ErrBadInput, err)
	}
	refs := make([]api.InstanceRef, 0, len(rows))
	for _, r := range rows {
		ref, err := cas.PutJSON(ctx, store, r)
		if err != nil {
			return nil, err
		}
		refs = append(refs, api.InstanceRef{ID: r.InstanceID, Ref: ref})
	}
	return refs, nil
}

// Select applies a dataset's instance filter and limit.
func Select(rows []swebench.Instance, d specs.Dataset) ([]swebench.Instance, error) {
	if len(d.Instances) > 0 {
		byID := map[string]swebench.Instance{}
		for _, r := range rows {
			byID[r.InstanceID] = r
		}
		var out []swebench.Instance
		for _, id := range d.Instances {
			r, ok := byID[id]
			if !ok {
				return nil, fmt.Errorf("dataset %s: instance %q named in the spec is not in the file", d.File, id)
			}
			out = append(out, r)
		}
		rows = out
	}
	if d.Limit > 0 && d.Limit < len(rows) {
		rows = rows[:d.Limit]
	}
	return rows, nil
}

// LoadPlan reads the compiled plan, so that each Issue workflow's history holds it once instead of every child's
// start event in the Sweep's history. A node of a kind this build does not declare fails it, naming the node: the
// Issue workflow would have no queue to send it to.
func (a *Activities) LoadPlan(ctx context.Context, in api.LoadPlanInput) (specs.Plan, error) {
	defer a.heartbeat(ctx)()
	var p specs.Plan
	store, err := a.Store(in.Run)
	if err != nil {
		return p, err
	}
	if err := cas.GetJSON(ctx, store, in.Plan, &p); err != nil {
		return p, permanentError(api.ErrBadInput, err)
	}
	for _, n := range p.Nodes {
		if _, ok := specs.Catalog[n.Activity]; !ok {
			return p, permanentError(api.ErrBadInput, fmt.Errorf("plan %s: node %s is of activity %q, which this "+
				"build does not declare (known: %s)", in.Plan, n.Key, n.Activity, strings.Join(specs.ActivityNames(), ", ")))
		}
	}
	return p, nil
}

// ErrRunFolder is the error type of a run-folder file that cannot be written because its path holds something else
// (a folder in place of results.jsonl): not retried, so the sweep stops naming the path instead of retrying forever.
const ErrRunFolder = "RunFolder"

// runFolderErr makes err permanent when it is a run-folder path that is not a file (regularfile.ErrNotAFile: retrying cannot help).
func runFolderErr(err error) error {
	if errors.Is(err, regularfile.ErrNotAFile) {
		return permanentError(ErrRunFolder, err)
	}
	return err
}

// Record appends rows to the run's results.jsonl, once per (instance, method, model) however often it is retried.
func (a *Activities) Record(ctx context.Context, in api.RecordInput) (int, error) {
	defer a.heartbeat(ctx)()
	// Every row with an error says its kind and whose failure it is, so no reader has to derive them.
	for _, r := range in.Rows {
		results.WithErrorClass(r)
	}
	n, err := results.Store{Path: runfolder.Rows(a.RunDir(in.Run))}.Append(in.Rows)
	return n, runFolderErr(err)
}

// StoreRows stores an issue's rows in the run's content store and returns their reference: the starter that watches
// the sweep reads them from there and writes results.jsonl, wherever this worker runs.
func (a *Activities) StoreRows(ctx context.Context, in api.RecordInput) (cas.Ref, error) {
	defer a.heartbeat(ctx)()
	store, err := a.Store(in.Run)
	if err != nil {
		return "", err
	}
	// Every row with an error says its kind and whose failure it is, so no reader has to derive them.
	for _, r := range in.Rows {
		results.WithErrorClass(r)
	}
	return cas.PutJSON(ctx, store, in.Rows)
}

// Summarize writes summary.md from results.jsonl and returns its text (for sweeps from before the starter wrote
// it: see WriteSummary).
func (a *Activities) Summarize(ctx context.Context, in api.SummarizeInput) (string, error) {
	defer a.heartbeat(ctx)()
	md, err := WriteSummary(a.RunDir(in.Run), in.Title, in.Order)
	return md, runFolderErr(err)
}

// SummarizeStored returns the summary of the rows a finished sweep stored, read from the run's content store, as
// summary.md would show them; it writes no file.
func (a *Activities) SummarizeStored(ctx context.Context, in api.SummarizeStoredInput) (string, error) {
	defer a.heartbeat(ctx)()
	store, err := a.Store(in.Run)
	if err != nil {
		return "", err
	}
	var all []results.Row
	for _, s := range in.Rows {
		var rows []results.Row
		if err := cas.GetJSON(ctx, store, s.Rows, &rows); err != nil {
			return "", fmt.Errorf("the rows of instance %s: %w", s.Instance, err)
		}
		all = append(all, rows...)
	}
	return results.Markdown(in.Title, results.Summarize(all, in.Order)), nil
}

// WriteSummary writes the run folder dir's summary.md from its results.jsonl, titled title with the methods in
// order, and returns its text.
func WriteSummary(dir, title string, order []results.Key) (string, error) {
	rows, bad, err := results.ReadFile(runfolder.Rows(dir))
	if err != nil {
		return "", err
	}
	md := results.Markdown(title, results.Summarize(rows, order))
	if len(bad) > 0 {
		md += fmt.Sprintf("\n%d line(s) of results.jsonl could not be read (first: line %d: %v).\n", len(bad),
			bad[0].Line, bad[0].Err)
	}
	path := runfolder.Summary(dir)
	if err := runfolder.RegularOrAbsent(path); err != nil {
		return "", err
	}
	return md, runfolder.WriteAtomic(path, []byte(md))
}

// SeesRun reads back the object a starter left under key in the run's objects: a worker whose store is not the
// starter's (another bucket, another server behind the same URL, a folder of its own disk) does not find it. It
// returns the store's name, and why it does not see the run.
func (a *Activities) SeesRun(ctx context.Context, in api.HandshakeInput) (store string, err error) {
	objs, err := a.Objects(in.Run)
	if err != nil {
		return "", err
	}
	b, err := objs.Get(ctx, in.Key)
	if err != nil {
		return objs.String(), err
	}
	if string(b) != in.Nonce {
		return objs.String(), fmt.Errorf("%s holds another starter's handshake", in.Key)
	}
	return objs.String(), nil
}
