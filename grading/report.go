package grading

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/dataset/swebench"
	"ctxlab/internal/safename"
	"ctxlab/results"
	"ctxlab/results/predictions"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// The report stage: the SWE-bench harness's evaluation output, which `starter grade` writes into the run folder
// (WriteHarnessOutput) so that tools written for the harness read ctxlab's grading unchanged (run from the run
// folder, as the harness's outputs are read from the folder it ran in):
//
//	logs/run_evaluation/<run_id>/<model>/<instance_id>/{report.json, test_output.txt, run_instance.log, patch.diff}
//	logs/run_evaluation/<run_id>/run.json
//	<model>.<run_id>.json
//
// The names are the harness's constants (swebench/harness/constants/__init__.py: LOG_REPORT, LOG_TEST_OUTPUT,
// LOG_INSTANCE, LOG_RUN_METADATA, SWE-bench/SWE-bench at commit 334882dd; run_instance's patch.diff and the log
// folder, run_evaluation.py at 16efb69b; the run report's name and fields, reporting.py at f2abdb82 with
// schema_version 2, and 5.0's infra_failure_* , ambiguous_failure_* and failure_reasons, SWE-bench#594, #637 and
// ctxlab issue 38). The run id is the run's name; the model folder is the prediction's model with "/" as "__".
const (
	harnessLogDir      = "logs/run_evaluation"
	harnessReport      = "report.json"
	harnessTestOutput  = "test_output.txt"
	harnessInstanceLog = "run_instance.log"
	harnessPatch       = "patch.diff"
	harnessRunMetadata = "run.json"
)

// The harness's test categories in an instance report's tests_status.
const (
	failToPass = "FAIL_TO_PASS"
	passToPass = "PASS_TO_PASS"
	failToFail = "FAIL_TO_FAIL"
	passToFail = "PASS_TO_FAIL"
)

// Graded is one graded prediction: its row (the grade's fields merged with the rest of its arm's, as the run folder
// holds it) and the stored log of its test runs (Outcome.Log; "" when none ran).
type Graded struct {
	Row results.Row
	Log cas.Ref
}

// HarnessRun is what run.json says of a grade run: its id (the run's name), the dataset and predictions files as
// given, and the grading settings' executor and timeout.
type HarnessRun struct {
	ID, Dataset, Predictions, Executor string
	Timeout                            time.Duration
}

// instanceReport is an instance's report.json entry (grading.py's get_eval_report, with 5.0's infra_failure).
type instanceReport struct {
	PatchIsNone  bool                           `json:"patch_is_None"`
	PatchExists  bool                           `json:"patch_exists"`
	PatchApplied bool                           `json:"patch_successfully_applied"`
	Resolved     bool                           `json:"resolved"`
	InfraFailure bool                           `json:"infra_failure"`
	TestsStatus  map[string]map[string][]string `json:"tests_status,omitempty"`
	// FailureReason and CtxlabStatus are ctxlab's additions: the instance's 5.0 failure reason, and its grade_status.
	FailureReason string `json:"failure_reason,omitempty"`
	CtxlabStatus  string `json:"ctxlab_grade_status,omitempty"`
}

// harnessRunReport is the harness's run report (reporting.py's make_run_report, schema_version 2, with 5.0's labels).
type harnessRunReport struct {
	Total               int               `json:"total_instances"`
	Submitted           int               `json:"submitted_instances"`
	Completed           int               `json:"completed_instances"`
	Resolved            int               `json:"resolved_instances"`
	Unresolved          int               `json:"unresolved_instances"`
	EmptyPatch          int               `json:"empty_patch_instances"`
	Error               int               `json:"error_instances"`
	InfraFailure        int               `json:"infra_failure_instances"`
	AmbiguousFailure    int               `json:"ambiguous_failure_instances"`
	CompletedIDs        []string          `json:"completed_ids"`
	IncompleteIDs       []string          `json:"incomplete_ids"`
	EmptyPatchIDs       []string          `json:"empty_patch_ids"`
	SubmittedIDs        []string          `json:"submitted_ids"`
	ResolvedIDs         []string          `json:"resolved_ids"`
	UnresolvedIDs       []string          `json:"unresolved_ids"`
	ErrorIDs            []string          `json:"error_ids"`
	InfraFailureIDs     []string          `json:"infra_failure_ids"`
	AmbiguousFailureIDs []string          `json:"ambiguous_failure_ids"`
	FailureReasons      map[string]string `json:"failure_reasons"`
	SchemaVersion       int               `json:"schema_version"`
	UnstoppedInstances  int               `json:"unstopped_instances"`
	UnstoppedContainers []string          `json:"unstopped_containers"`
	UnremovedImages     []string          `json:"unremoved_images"`
}

// runMetadata is run.json: what the run was, so that it can be graded again from its logs.
type runMetadata struct {
	RunID       string `json:"run_id"`
	Dataset     string `json:"dataset"`
	Split       string `json:"split"`
	Predictions string `json:"predictions_path"`
	Timeout     int    `json:"timeout"`
	Executor    string `json:"ctxlab_executor"`
}

// reportList is the list of the run report a prediction is counted in.
type reportList int

const (
	inError reportList = iota // error_ids: a patch that did not apply, or a failure that is no one's in particular
	inResolved
	inUnresolved
	inEmptyPatch
	inInfraFailure
)

// harnessOutcome is where a graded row falls in the run report.
type harnessOutcome struct {
	list      reportList
	completed bool // a report.json is written
	failure   Failure
}

// outcomeOf places a graded row: a verdict (resolved, unresolved, 5.0's ambiguous failures among the unresolved),
// an empty patch, a patch that did not apply (the harness's error), or a row error, which its kind labels
// (KindFailure: the environment's are infrastructure failures).
func outcomeOf(r results.Row, log string) harnessOutcome {
	status := r.String(specs.GradeStatus.Name)
	if r.String(results.FieldError) != "" {
		k, _ := errkind.OfType(results.ErrorKind(r))
		f := KindFailure(k)
		if f.Infra {
			return harnessOutcome{list: inInfraFailure, failure: f}
		}
		return harnessOutcome{list: inError}
	}
	switch status {
	case StatusResolved:
		return harnessOutcome{list: inResolved, completed: true}
	case StatusEmptyPatch:
		return harnessOutcome{list: inEmptyPatch}
	case StatusMalformed, StatusPatchFailed, "":
		return harnessOutcome{list: inError}
	}
	exit, ok := r.Float(specs.GradeExitCode.Name)
	return harnessOutcome{list: inUnresolved, completed: true,
		failure: StatusFailure(status, int(exit), ok, log)}
}

// WriteHarnessOutput writes the harness's evaluation output of a grade run into its run folder (see the top of this
// file). dataset is every row of the dataset, preds and out the graded predictions and their rows in the same order.
func WriteHarnessOutput(ctx context.Context, store cas.Store, runDir string, run HarnessRun,
	dataset []swebench.Instance, preds []predictions.Prediction, out []Graded) error {
	root, err := os.OpenRoot(runDir)
	if err != nil {
		return err
	}
	defer root.Close()
	runLogs := path.Join(harnessLogDir, safename.File(run.ID))
	meta := runMetadata{RunID: run.ID, Dataset: run.Dataset, Split: "test", Predictions: run.Predictions,
		Timeout: int(run.Timeout.Seconds()), Executor: run.Executor}
	if err := writeJSON(root, path.Join(runLogs, harnessRunMetadata), meta); err != nil {
		return err
	}
	byID := map[string]swebench.Instance{}
	for _, in := range dataset {
		byID[in.InstanceID] = in
	}
	reports := map[string]*harnessRunReport{}
	var models []string
	for i, p := range preds {
		model := strings.ReplaceAll(p.ModelNameOrPath, "/", "__")
		rep := reports[model]
		if rep == nil {
			rep = newHarnessRunReport(len(dataset))
			reports[model] = rep
			models = append(models, model)
		}
		var log []byte
		if out[i].Log != "" {
			if log, err = store.Get(ctx, out[i].Log); err != nil {
				return err
			}
		}
		oc := outcomeOf(out[i].Row, string(log))
		rep.add(p.InstanceID, oc)
		if oc.list == inEmptyPatch {
			continue // the harness runs nothing for it, and writes no folder
		}
		dir := path.Join(runLogs, safename.File(model), safename.File(p.InstanceID))
		if err := writeInstanceLogs(root, dir, byID[p.InstanceID], p, out[i].Row, oc, log); err != nil {
			return err
		}
	}
	for _, model := range models {
		rep := reports[model]
		for _, in := range dataset {
			if !slices.Contains(rep.SubmittedIDs, in.InstanceID) {
				rep.IncompleteIDs = append(rep.IncompleteIDs, in.InstanceID)
			}
		}
		rep.finish()
		if err := writeJSON(root, safename.File(model+"."+run.ID+".json"), rep); err != nil {
			return err
		}
	}
	return nil
}

func newHarnessRunReport(total int) *harnessRunReport {
	return &harnessRunReport{Total: total, SchemaVersion: 2, FailureReasons: map[string]string{}, CompletedIDs: []string{},
		IncompleteIDs: []string{}, EmptyPatchIDs: []string{}, SubmittedIDs: []string{}, ResolvedIDs: []string{},
		UnresolvedIDs: []string{}, ErrorIDs: []string{}, InfraFailureIDs: []string{}, AmbiguousFailureIDs: []string{},
		UnstoppedContainers: []string{}, UnremovedImages: []string{}}
}

// add counts one prediction's outcome.
func (r *harnessRunReport) add(id string, oc harnessOutcome) {
	r.SubmittedIDs = append(r.SubmittedIDs, id)
	if oc.completed {
		r.CompletedIDs = append(r.CompletedIDs, id)
	}
	switch oc.list {
	case inResolved:
		r.ResolvedIDs = append(r.ResolvedIDs, id)
	case inUnresolved:
		r.UnresolvedIDs = append(r.UnresolvedIDs, id)
	case inEmptyPatch:
		r.EmptyPatchIDs = append(r.EmptyPatchIDs, id)
	case inInfraFailure:
		r.InfraFailureIDs = append(r.InfraFailureIDs, id)
	default:
		r.ErrorIDs = append(r.ErrorIDs, id)
	}
	if oc.failure.Ambiguous {
		r.AmbiguousFailureIDs = append(r.AmbiguousFailureIDs, id)
	}
	if oc.failure.Reason != "" {
		r.FailureReasons[id] = oc.failure.Reason
	}
}

// finish sorts the lists and counts them, as make_run_report does.
func (r *harnessRunReport) finish() {
	for _, l := range [][]string{r.CompletedIDs, r.IncompleteIDs, r.EmptyPatchIDs, r.SubmittedIDs, r.ResolvedIDs,
		r.UnresolvedIDs, r.ErrorIDs, r.InfraFailureIDs, r.AmbiguousFailureIDs} {
		slices.Sort(l)
	}
	r.Submitted, r.Completed, r.Resolved, r.Unresolved = len(r.SubmittedIDs), len(r.CompletedIDs),
		len(r.ResolvedIDs), len(r.UnresolvedIDs)
	r.EmptyPatch, r.Error, r.InfraFailure, r.AmbiguousFailure = len(r.EmptyPatchIDs), len(r.ErrorIDs),
		len(r.InfraFailureIDs), len(r.AmbiguousFailureIDs)
}

// writeInstanceLogs writes an instance's folder: its patch, ctxlab's account of the grade (run_instance.log), the
// test log and, for a grade that ran the tests, report.json.
func writeInstanceLogs(root *os.Root, dir string, in swebench.Instance, p predictions.Prediction, r results.Row,
	oc harnessOutcome, log []byte) error {
	if err := writeFile(root, path.Join(dir, harnessPatch), []byte(p.ModelPatch)); err != nil {
		return err
	}
	if err := writeFile(root, path.Join(dir, harnessInstanceLog), []byte(instanceLog(in, r, oc))); err != nil {
		return err
	}
	if log != nil {
		if err := writeFile(root, path.Join(dir, harnessTestOutput), log); err != nil {
			return err
		}
	}
	if !oc.completed {
		return nil
	}
	rep := instanceReport{PatchExists: true, PatchApplied: true, Resolved: oc.list == inResolved,
		TestsStatus: testsStatus(in, r), FailureReason: oc.failure.Reason,
		CtxlabStatus: r.String(specs.GradeStatus.Name)}
	return writeJSON(root, path.Join(dir, harnessReport), map[string]instanceReport{p.InstanceID: rep})
}

// testsStatus is the harness's per-category success and failure lists (get_eval_tests_report) from a row: a
// listed test that failed or had no result failed; one that was skipped counts neither way, as in Decide.
func testsStatus(in swebench.Instance, r results.Row) map[string]map[string][]string {
	failed, _ := specs.TestsFailed.Get(r)
	missing, _ := specs.TestsMissing.Get(r)
	failed = append(slices.Clip(failed), missing...)
	skipped, _ := specs.TestsSkipped.Get(r)
	split := func(names []string) map[string][]string {
		m := map[string][]string{"success": {}, "failure": {}}
		for _, n := range names {
			switch {
			case slices.Contains(failed, n):
				m["failure"] = append(m["failure"], n)
			case !slices.Contains(skipped, n):
				m["success"] = append(m["success"], n)
			}
		}
		return m
	}
	empty := map[string][]string{"success": {}, "failure": {}}
	return map[string]map[string][]string{failToPass: split(in.FailToPass), passToPass: split(in.PassToPass),
		failToFail: empty, passToFail: empty}
}

// instanceLog is run_instance.log: what ctxlab did with the instance and how it ended.
func instanceLog(in swebench.Instance, r results.Row, oc harnessOutcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ctxlab grade of instance %s (executor %s)\n", in.InstanceID, r.String(specs.GradeExecutor.Name))
	for _, f := range []string{specs.PatchApply.Name, specs.GradeStatus.Name, results.FieldErrorKind} {
		if v := strings.TrimSpace(r.String(f)); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", f, v)
		}
	}
	if reason := Explanation(r); reason != "" {
		fmt.Fprintf(&b, "reason: %s\n", reason)
	}
	if oc.completed {
		fmt.Fprintf(&b, "Result for %s: resolved: %v\n", in.InstanceID, oc.list == inResolved)
	}
	if oc.failure.Reason != "" {
		fmt.Fprintf(&b, "failure reason (SWE-bench 5.0): %s (infra %v, ambiguous %v)\n", oc.failure.Reason,
			oc.failure.Infra, oc.failure.Ambiguous)
	}
	return b.String()
}

func writeJSON(root *os.Root, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	return writeFile(root, name, append(b, '\n'))
}

// writeFile writes a file under root (never through a link out of it), replacing it whole.
func writeFile(root *os.Root, name string, b []byte) error {
	if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	tmp := name + ".tmp"
	if err := root.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return root.Rename(tmp, name)
}

// Explanation is the first line of whatever explains a graded row's status (its error, the grade's error, build
// error or note, else the listed tests that did not pass), shortened for a summary line.
func Explanation(r results.Row) string {
	for _, f := range []string{results.FieldError, specs.GradeError.Name, specs.GradeBuildError.Name, specs.GradeNote.Name} {
		if text := strings.TrimSpace(r.String(f)); text != "" {
			line, _, _ := strings.Cut(text, "\n")
			if len(line) > 160 {
				line = line[:160] + "..."
			}
			return line
		}
	}
	// Otherwise the listed tests that did not pass say it.
	var parts []string
	for _, f := range []specs.Field[[]string]{specs.TestsMissing, specs.TestsFailed, specs.TestsSkipped} {
		if names, _ := f.Get(r); len(names) > 0 {
			more := ""
			if len(names) > 5 {
				names, more = names[:5], fmt.Sprintf(" (+%d)", len(names)-5)
			}
			parts = append(parts, strings.TrimPrefix(f.Name, "tests_")+": "+strings.Join(names, ", ")+more)
		}
	}
	return strings.Join(parts, "; ")
}
