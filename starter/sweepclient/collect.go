package sweepclient

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"ctxlab/activities/api"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
	"ctxlab/store/objects"
	"ctxlab/workflows"
)

// rowCollector writes the rows a sweep's issues stored in the run's content store (workflows.RowsQuery,
// SweepResult.Rows) into the run folder's results.jsonl: the starter that watches the sweep is the one writer of that
// file, wherever the workers ran. results.Store.Append keeps one row per key, so rows collected twice (by a starter
// that attached again, or from the finished sweep's list) are written once.
type rowCollector struct {
	client client.Client
	id     string // the sweep's workflow id
	store  cas.Store
	rows   results.Store
	// records, with a shared store, holds the workers' attempt and call records, gathered into the run folder's
	// attempts.jsonl and calls.jsonl with the rows (nil: the workers write those files themselves).
	records objects.Store

	mu   sync.Mutex
	next int   // index of the first stored entry not written yet
	err  error // the last failure to read or write stored rows
}

func newRowCollector(c client.Client, id string, store cas.Store, runDir string) *rowCollector {
	return &rowCollector{client: c, id: id, store: store, rows: results.Store{Path: runfolder.Rows(runDir)}}
}

// poll writes the rows the running sweep's issues stored since the last poll.
func (c *rowCollector) poll(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gatherRecords(ctx)
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	v, err := c.client.QueryWorkflow(qctx, c.id, "", workflows.RowsQuery, c.next)
	cancel()
	var stored []api.IssueRows
	if err == nil {
		err = v.Get(&stored)
	}
	if err != nil {
		return // a sweep that does not answer yet (or runs older code) is asked again next time
	}
	n, err := c.write(ctx, stored)
	c.next += n
	c.err = err
}

// finish writes the rows of every issue of a finished sweep, and returns the first failure to read or write them.
func (c *rowCollector) finish(ctx context.Context, stored []api.IssueRows) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gatherRecords(ctx)
	_, err := c.write(ctx, stored)
	return err
}

// gatherRecords appends the workers' records shipped since the last gathering to the run folder's files; a store
// that does not answer is asked again next time.
func (c *rowCollector) gatherRecords(ctx context.Context) {
	if c.records == nil {
		return
	}
	dir := filepath.Dir(c.rows.Path)
	for _, file := range []string{runfolder.AttemptsFile, runfolder.CallsFile} {
		_, _ = runlog.Gather(ctx, c.records, filepath.Join(dir, file))
	}
}

// gatherRunRecords gathers into the run folder dir the attempt and call records that the workers of run name shipped
// to the shared store setting names (nothing when it is no shared store): starter status and audit read them there.
func gatherRunRecords(setting, name, dir string) error {
	if !bucket.Shared(setting) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs, err := bucket.OpenObjects(ctx, setting, name, dir)
	if err != nil {
		return err
	}
	for _, file := range []string{runfolder.AttemptsFile, runfolder.CallsFile} {
		if _, err := runlog.Gather(ctx, objs, filepath.Join(dir, file)); err != nil {
			return fmt.Errorf("gathering %s from %s: %w", file, objs, err)
		}
	}
	return nil
}

// write appends the stored rows in order, and returns how many entries it wrote before the first failure.
func (c *rowCollector) write(ctx context.Context, stored []api.IssueRows) (int, error) {
	for i, s := range stored {
		var rows []results.Row
		if err := cas.GetJSON(ctx, c.store, s.Rows, &rows); err != nil {
			return i, fmt.Errorf("the rows of instance %s: %w", s.Instance, err)
		}
		if _, err := c.rows.Append(rows); err != nil {
			return i, fmt.Errorf("writing the rows of instance %s: %w", s.Instance, err)
		}
	}
	return len(stored), nil
}

// missingRows lists the rows of the plan's arms on the instances that results.jsonl of runDir lacks, in dataset and
// plan order: a finished sweep with any is not done, whatever its issues said.
func missingRows(runDir string, plan *specs.Plan, instances []string) ([]results.Key, error) {
	rows, _, err := results.ReadFile(runfolder.Rows(runDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	have := make(map[results.Key]bool, len(rows))
	for _, r := range rows {
		have[r.Key()] = true
	}
	var missing []results.Key
	for _, id := range instances {
		for _, arm := range plan.Arms {
			if k := (results.Key{Instance: id, Method: arm.Method, Model: arm.Model, Sample: arm.Sample}); !have[k] {
				missing = append(missing, k)
			}
		}
	}
	return missing, nil
}
