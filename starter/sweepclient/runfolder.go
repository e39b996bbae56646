package sweepclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/embedded"
	"ctxlab/starter/exitcode"
)

// checkRunFolder refuses a run folder where one of those paths holds something else (a folder where results.jsonl
// belongs): writing there fails every time, and retrying the step would never end.
func checkRunFolder(runDir string) error {
	for _, name := range runfolder.Files {
		if err := runfolder.RegularOrAbsent(filepath.Join(runDir, name)); err != nil {
			return err
		}
	}
	for _, name := range runfolder.Dirs {
		path := filepath.Join(runDir, name)
		st, err := os.Lstat(path)
		switch {
		case err == nil && st.Mode()&os.ModeSymlink != 0:
			// The run writes memos and locks in it: through a link, they would land wherever it points.
			return fmt.Errorf("%s is a symbolic link where the run keeps a folder: move it out of the way and run "+
				"again", path)
		case err == nil && !st.IsDir():
			return fmt.Errorf("%s is a file where the run keeps a folder: move it out of the way and run again", path)
		}
	}
	return nil
}

// specConflictError is a running sweep of the run folder that another spec started: a starter of this spec must
// not attach to it (it would print the other spec's results as its own) nor replace it.
type specConflictError struct {
	id, running, this string
	// hint says what in this spec reproduces the running sweep's hash, when the starter knows (formerDefaultHint).
	hint string
}

func (e *specConflictError) Error() string {
	msg := fmt.Sprintf("%s is running from another spec (spec hash %s; this spec's is %s): it finishes as it "+
		"began; run this spec once it has finished (its rows are then put aside), or give this spec another name",
		e.id, short(e.running), short(e.this))
	if e.hint != "" {
		msg += "; " + e.hint
	}
	return msg
}

// formerDefaultError refuses to replace a finished sweep whose spec differs from this one only by the experiment's
// default tokenizer (recordedUnderFormerDefault): the spec text did not change, so the researcher did not ask for a
// new sweep, and running one would compute (and pay for) every budget-dependent step again.
type formerDefaultError struct{ finished string }

func (e *formerDefaultError) Error() string {
	return fmt.Sprintf("this run folder's sweep (spec hash %[1]s) finished when every model counted its budgets in "+
		"%[2]s by default; this spec counts each model's in its own tokenizer, which would run (and pay for) the "+
		"sweep again: add tokenizer: '%[2]s' to the experiment to keep the finished sweep, or give the experiment "+
		"another name to run it in each model's tokenizer (docs/models.md, Tokenizers)", short(e.finished),
		specs.FormerDefaultTokenizer)
}

// short is the first 12 digits of a spec hash, as previous/HASH names it.
func short(hash string) string { return hash[:min(len(hash), 12)] }

// refuseOtherSpec returns a specConflictError when the sweep id is running from a spec other than hash.
func refuseOtherSpec(ctx context.Context, c client.Client, id, hash string) error {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("looking up workflow %s: %w", id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil
	}
	if old := memoSpecHash(info); old != "" && old != hash {
		return &specConflictError{id: id, running: old, this: hash}
	}
	return nil
}

// memoSpecHash is the spec hash a sweep was started with ("" for a sweep started before starters recorded it).
func memoSpecHash(info *workflowpb.WorkflowExecutionInfo) string {
	old := ""
	if p, ok := info.GetMemo().GetFields()[specHashMemo]; ok {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &old)
	}
	return old
}

// exitCodeOf is the exit code of a starter that could not start or attach to its sweep: exitcode.Usage for a spec that
// conflicts with the running one (nothing ran), else exitcode.Fail.
func exitCodeOf(err error) int {
	var conflict *specConflictError
	var former *formerDefaultError
	if errors.As(err, &conflict) || errors.As(err, &former) {
		return exitcode.Usage
	}
	return exitcode.Fail
}

// damagedDBHint says what to do about a run folder's damaged Temporal database ("" when err is another error): the
// sweep's work is kept outside it, so starting over on a fresh one loses nothing.
func damagedDBHint(err error, spec string) string {
	var damaged *embedded.DamagedError
	if !errors.As(err, &damaged) {
		return ""
	}
	return fmt.Sprintf("the sweep's finished steps are kept outside that database (node outputs in nodes/, grades in "+
		"grades/, model answers in the response cache, rows in results.jsonl), so a fresh database loses no work: "+
		"`starter run %s --fresh-db` (with this run's other flags) moves the damaged one aside and runs the sweep "+
		"again, taking every finished step from its memo", spec)
}
