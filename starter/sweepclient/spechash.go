package sweepclient

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/workflows"
)

// specHash identifies what a sweep computes; settings that only change how fast it runs are left out, so changing
// them does not restart a finished sweep. The dataset counts by its content, not by its absolute path: a checkout
// (or runs folder) moved elsewhere computes the same sweep, while an edited dataset file is a new spec. The plan
// counts without its annotations that change nothing that runs (the borrowed marks of plan format 1), so a sweep
// finished before an upgrade that added them is still the same sweep.
func specHash(in workflows.SweepInput, plan *specs.Plan) (string, error) {
	// The rows count through the dataset's digest below, the shipped folders through the rows' repositories.
	in.Concurrency, in.MaxHistory, in.InfraWaits, in.Retry, in.Instances, in.Shipped = 0, 0, 0, nil, nil, ""
	planRef, err := unannotatedPlanRef(plan)
	if err != nil {
		return "", err
	}
	in.Plan = planRef
	digest, err := datasetDigest(in.Dataset.File)
	if err != nil {
		return "", err
	}
	in.Dataset.File = digest
	b, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// formerDefaultHash is the spec hash the experiment had when its default tokenizer was specs.FormerDefaultTokenizer
// (pinned for every model): the hash a sweep of the same spec text started before the default became 'model' was
// recorded under. It is "" when the experiment does not count in each model's own tokenizer (its hash did not
// change with the default) or when that plan does not build.
func formerDefaultHash(e *specs.Experiment, in workflows.SweepInput) string {
	if e.Tokenizer != specs.TokenizerModel {
		return ""
	}
	former := *e
	former.Tokenizer = specs.FormerDefaultTokenizer
	plan, err := specs.BuildPlan(&former)
	if err != nil {
		return ""
	}
	hash, err := specHash(in, plan)
	if err != nil {
		return ""
	}
	return hash
}

// recordedUnderFormerDefault reports whether a sweep's recorded spec hash is this spec's under the former default
// tokenizer, exactly: then the spec differs from the sweep's only by the default, and pinning it is the same spec.
func recordedUnderFormerDefault(e *specs.Experiment, in workflows.SweepInput, recorded string) bool {
	return recorded != "" && formerDefaultHash(e, in) == recorded
}

// formerDefaultHint says how to resume a running sweep recorded under the spec hash recorded, "" unless
// recordedUnderFormerDefault.
func formerDefaultHint(e *specs.Experiment, in workflows.SweepInput, recorded string) string {
	if !recordedUnderFormerDefault(e, in, recorded) {
		return ""
	}
	return fmt.Sprintf("it was started when every model counted its budgets in %[1]s by default, and this spec "+
		"counts each model's in its own tokenizer: add tokenizer: '%[1]s' to the experiment to resume this sweep as "+
		"it was started (docs/models.md, Tokenizers)", specs.FormerDefaultTokenizer)
}

// unannotatedPlanRef is the content reference the plan had before plan formats: the same plan with format 0 and no
// borrowed marks, encoded as the content store encodes it.
func unannotatedPlanRef(plan *specs.Plan) (cas.Ref, error) {
	bare := specs.Plan{Nodes: plan.Nodes, Arms: make([]specs.Arm, len(plan.Arms))}
	for i, arm := range plan.Arms {
		arm.Steps = slices.Clone(arm.Steps)
		for j := range arm.Steps {
			arm.Steps[j].Borrowed = false
		}
		bare.Arms[i] = arm
	}
	b, err := json.Marshal(bare)
	if err != nil {
		return "", fmt.Errorf("hashing the plan: %w", err)
	}
	return cas.RefOf(b), nil
}

// datasetDigest hashes a dataset's content: a file's bytes, or for a folder of shards the slash-separated path and
// bytes of every regular file under it, in lexical order.
func datasetDigest(path string) (string, error) {
	h := sha256.New()
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("hashing the dataset: %w", err)
	}
	if !st.IsDir() {
		if err := hashFile(h, path, false); err != nil {
			return "", err
		}
		return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
	}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(path, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
		return hashFile(h, p, true)
	})
	if err != nil {
		return "", fmt.Errorf("hashing the dataset %s: %w", path, err)
	}
	return "sha256-dir:" + hex.EncodeToString(h.Sum(nil)), nil
}

// hashFile writes the file's bytes to h, after its size when sized (which keeps the files of a folder apart).
func hashFile(h io.Writer, path string, sized bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("hashing the dataset: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("hashing the dataset: %w", err)
	}
	if sized {
		fmt.Fprintf(h, "%d\x00", st.Size())
	}
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("hashing the dataset %s: %w", path, err)
	}
	return nil
}
