// Package batch grades a batch of SWE-bench predictions as the harness's run_evaluation does, for starter grade:
// it reads the dataset and the predictions (or makes the dataset's own gold or empty ones to validate it), grades
// each prediction with a Grader, concurrently, replaces their rows in the run folder and writes the harness's log
// tree and run report (grading.WriteHarnessOutput). Grading one prediction is the caller's: starter grade runs its
// grade plan through the steps (activities.PredictionGrader), so its row is built, memoized and resumed as a
// sweep's is.
package batch

import (
	"maps"
	"slices"
	"strings"

	"ctxlab/dataset/swebench"
	"ctxlab/results/predictions"
)

// The predictions arguments that grade a dataset's own patches, or none, to validate the dataset before paying for
// a sweep, as the harness's gold run does: every gold patch should resolve its instance and no empty patch should.
// A file named gold or empty is read as ./gold or ./empty.
const (
	Gold  = "gold"
	Empty = "empty"
)

// IsValidation says whether a predictions argument names a validation (Gold, Empty) rather than a file.
func IsValidation(predictionsArg string) bool {
	return predictionsArg == Gold || predictionsArg == Empty
}

// Inputs are a batch's dataset and the predictions of its instances.
type Inputs struct {
	// ByID is every instance of the dataset by id.
	ByID map[string]swebench.Instance
	// Predictions are the predictions that name an instance of the dataset, in their file's order.
	Predictions []predictions.Prediction
	// Unknown are the ids, sorted and each once, of the instances not in the dataset that Ignored predictions
	// name.
	Unknown []string
	Ignored int
}

// Read reads the dataset file and the predictions: predictionsArg is a predictions file, or Gold or Empty for one
// prediction per instance of the dataset.
func Read(datasetFile, predictionsArg string) (Inputs, error) {
	rows, err := swebench.ReadFile(datasetFile)
	if err != nil {
		return Inputs{}, err
	}
	var preds []predictions.Prediction
	if IsValidation(predictionsArg) {
		preds = datasetPredictions(rows, predictionsArg)
	} else if preds, err = predictions.ReadFile(predictionsArg); err != nil {
		return Inputs{}, err
	}
	in := Inputs{ByID: map[string]swebench.Instance{}}
	for _, r := range rows {
		in.ByID[r.InstanceID] = r
	}
	for _, p := range preds {
		if _, ok := in.ByID[p.InstanceID]; ok {
			in.Predictions = append(in.Predictions, p)
		} else {
			in.Unknown = append(in.Unknown, p.InstanceID)
			in.Ignored++
		}
	}
	slices.Sort(in.Unknown)
	in.Unknown = slices.Compact(in.Unknown)
	return in, nil
}

// Graded are the instances the predictions name, each once, in the predictions' order.
func (in Inputs) Graded() []swebench.Instance {
	var graded []swebench.Instance
	for _, p := range in.Predictions {
		if inst := in.ByID[p.InstanceID]; !slices.ContainsFunc(graded, func(g swebench.Instance) bool {
			return g.InstanceID == inst.InstanceID
		}) {
			graded = append(graded, inst)
		}
	}
	return graded
}

// Dataset is every instance of the dataset, sorted by id.
func (in Inputs) Dataset() []swebench.Instance {
	return slices.SortedFunc(maps.Values(in.ByID), func(a, b swebench.Instance) int {
		return strings.Compare(a.InstanceID, b.InstanceID)
	})
}

// NoFixPatch is the prediction of Empty. A literally empty patch is graded empty_patch without running anything (as
// the harness does), which would check nothing about the dataset; this patch adds one marker file in a hidden
// folder that no test runner collects, so the tests run on the base commit with the test patch alone, and a
// FAIL_TO_PASS test that passes there shows in the validation.
const NoFixPatch = `diff --git a/.ctxlab/no-fix b/.ctxlab/no-fix
new file mode 100644
--- /dev/null
+++ b/.ctxlab/no-fix
@@ -0,0 +1 @@
+starter grade --predictions empty: the tests run without a fix
`

// datasetPredictions makes one prediction per instance: its gold patch, or no fix; the model is the mode.
func datasetPredictions(rows []swebench.Instance, mode string) []predictions.Prediction {
	out := make([]predictions.Prediction, len(rows))
	for i, r := range rows {
		out[i] = predictions.Prediction{InstanceID: r.InstanceID, ModelNameOrPath: mode, ModelPatch: NoFixPatch}
		if mode == Gold {
			out[i].ModelPatch = r.Patch
		}
	}
	return out
}
