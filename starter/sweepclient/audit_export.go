package sweepclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"ctxlab/activities"
	"ctxlab/activities/contexts"
	"ctxlab/grading"
	"ctxlab/internal/safename"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
	"ctxlab/store/objects"
)

// The files of one exported row, as the SWE-bench harness keeps an instance's logs: one folder per model, method
// and instance, so a researcher can ls, grep and open one failure in an editor.
const (
	ExportContext    = "context.txt"
	ExportPatch      = "patch.diff"
	ExportTestOutput = "test_output.txt"
	ExportRow        = "row.json"
)

// exportCounts says what an export wrote.
type exportCounts struct {
	Rows, Files int
}

// exportRun writes DIR/<model>/<method>/<instance>/{context.txt,patch.diff,test_output.txt,row.json} for every row
// of the run that --issue and --method keep. A file whose object the run never stored (the step failed, or the row
// was graded outside a sweep) is left out; row.json is always written.
func exportRun(ctx context.Context, o AuditOptions, runDir string, plan *specs.Plan) (exportCounts, error) {
	var n exportCounts
	rows, _, err := results.ReadFile(runfolder.Rows(runDir))
	if err != nil {
		return n, err
	}
	store, err := bucket.Open(ctx, o.Store, o.Name, runfolder.CAS(runDir))
	if err != nil {
		return n, err
	}
	objs, err := bucket.OpenObjects(ctx, o.Store, o.Name, runDir)
	if err != nil {
		return n, err
	}
	var arms map[results.Key]armNodes // none without a plan (no spec recorded)
	if plan != nil {
		arms = armNodesOf(plan)
	}
	for _, row := range rows {
		k := row.Key()
		if o.Issue != "" && k.Instance != o.Issue {
			continue
		}
		if o.Method != "" && k.Method != o.Method && k.Model+"/"+k.Method != o.Method {
			continue
		}
		// One folder name each, whatever the names hold ('/', '..', control characters, 10 KB; see safename.File).
		folder := filepath.Join(o.Export, safename.File(k.Model), safename.File(k.Method), safename.File(k.Instance))
		if !isWithin(o.Export, folder) { // safename keeps names inside; this says so again at the write
			return n, fmt.Errorf("row %s/%s/%s would be written outside %s", k.Model, k.Method, k.Instance, o.Export)
		}
		files, err := writeRowFolder(ctx, store, objs, arms, row, folder)
		if err != nil {
			return n, fmt.Errorf("row %s/%s/%s: %w", k.Model, k.Method, k.Instance, err)
		}
		n.Rows++
		n.Files += files
	}
	return n, nil
}

// writeRowFolder writes one row's folder and returns how many files it wrote.
func writeRowFolder(ctx context.Context, store cas.Store, objs objects.Store, arms map[results.Key]armNodes, row results.Row,
	folder string) (int, error) {
	if err := writeRowJSON(folder, row); err != nil {
		return 0, err
	}
	files := 1
	write := func(name string, ref cas.Ref, render func([]byte) ([]byte, error)) error {
		if ref == "" {
			return nil
		}
		b, err := store.Get(ctx, ref)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, ref, err)
		}
		if render != nil {
			if b, err = render(b); err != nil {
				return fmt.Errorf("%s: %s: %w", name, ref, err)
			}
		}
		files++
		return os.WriteFile(filepath.Join(folder, name), b, 0o644)
	}
	refs := armRefs(ctx, objs, arms, row)
	if err := write(ExportPatch, refs.patch, nil); err != nil {
		return files, err
	}
	if err := write(ExportTestOutput, refs.testOutput, nil); err != nil {
		return files, err
	}
	if status := row.String(specs.GradeStatus.Name); refs.testOutput == "" && status != "" {
		// Graded without running tests (an empty patch, one that does not apply): the folder still says why.
		note := fmt.Sprintf("ctxlab: no test ran for this row: grade_status %s", status)
		if reason := grading.Explanation(row); reason != "" {
			note += " (" + reason + ")"
		}
		if err := os.WriteFile(filepath.Join(folder, ExportTestOutput), []byte(note+"\n"), 0o644); err != nil {
			return files, err
		}
		files++
	}
	err := write(ExportContext, refs.context, func(b []byte) ([]byte, error) {
		var c contexts.Context
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, err
		}
		return []byte(c.Render()), nil
	})
	return files, err
}

// writeRowJSON creates folder and writes the row into it, indented.
func writeRowJSON(folder string, row results.Row) error {
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(row, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(folder, ExportRow), append(b, '\n'), 0o644)
}

// rowRefs are the stored objects behind a row: the context its patch step read, the patch, the test log.
type rowRefs struct {
	context, patch, testOutput cas.Ref
}

// armRefs finds a row's objects through its arm's nodes (armNodesOf); a row of no known arm has its patch_ref only.
func armRefs(ctx context.Context, objs objects.Store, arms map[results.Key]armNodes, row results.Row) rowRefs {
	k := row.Key()
	return arms[results.Key{Method: k.Method, Model: k.Model, Sample: k.Sample}].refs(ctx, objs, row)
}

// refs finds a row's objects, each through the output its node memoized under nodes/; the patch is the one the row's
// grade recorded (patch_ref), else the patch node's.
func (an armNodes) refs(ctx context.Context, objs objects.Store, row results.Row) rowRefs {
	instance := row.Key().Instance
	output := func(key string) cas.Ref {
		if key == "" {
			return ""
		}
		out, ok := activities.ReadNodeMemo(ctx, objs, instance, key)
		if !ok {
			return ""
		}
		return out.Ref
	}
	refs := rowRefs{context: output(an.context), testOutput: output(an.grade)}
	if refs.patch = cas.Ref(row.String(specs.PatchRef.Name)); refs.patch == "" {
		refs.patch = output(an.patch)
	}
	return refs
}

// isWithin reports whether path lies inside dir (not dir itself).
func isWithin(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && filepath.IsLocal(rel)
}

// printExport says where the export went.
func printExport(w io.Writer, dir string, n exportCounts) {
	fmt.Fprintf(w, "exported %d rows (%d files) to %s: MODEL/METHOD/INSTANCE/{%s,%s,%s,%s}\n", n.Rows, n.Files,
		dir, ExportContext, ExportPatch, ExportTestOutput, ExportRow)
}
