package sweepclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"ctxlab/activities"
	"ctxlab/dataset/swebench"
	"ctxlab/results/runstate"
	"ctxlab/runfolder"
	"ctxlab/specs"
)

// runFolder returns runs/NAME, or an error naming the folder when there is none.
func runFolder(runs, name string) (string, error) {
	dir := filepath.Join(runs, name)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("no run folder %s (start the sweep with `starter run SPEC`, or pass --runs)", dir)
	}
	return dir, nil
}

// SweepShape is what a run folder says its sweep is made of: the plan of the recorded spec and the instances of
// the dataset it prepared. Each is nil when it cannot be known (no spec recorded yet, dataset gone); callers then
// use what the records name.
type SweepShape struct {
	Plan      *specs.Plan
	Instances []string
	// rows are the instances' dataset rows and dataset the spec's dataset (nil and zero when the dataset is gone):
	// a repair re-derives rows only from node outputs memoized under these rows' content.
	Rows    []swebench.Instance
	Dataset specs.Dataset
	// note says why a part is missing.
	Note string
}

func ReadShape(dir string) SweepShape {
	var sh SweepShape
	e, err := readSpecRecord(dir)
	if err != nil || e == nil {
		sh.Note = "no spec recorded in " + runfolder.Spec(dir) + "; counting what the records name"
		if err != nil {
			sh.Note = err.Error() + "; counting what the records name"
		}
		return sh
	}
	if p, err := specs.BuildPlan(e); err == nil {
		sh.Plan = p
	} else {
		sh.Note = fmt.Sprintf("%s: %v", runfolder.Spec(dir), err)
	}
	// starter run recorded the dataset file it prepared (a generated one lives in the run folder).
	if e.Dataset.File != "" {
		rows, err := swebench.ReadFile(e.Dataset.File)
		if err == nil {
			var sel []swebench.Instance
			if sel, err = activities.Select(rows, e.Dataset); err == nil {
				sh.Rows, sh.Dataset = sel, e.Dataset
				sh.Instances = make([]string, len(sel))
				for i, in := range sel {
					sh.Instances[i] = in.InstanceID
				}
			}
		}
		if err != nil {
			sh.Note = fmt.Sprintf("dataset %s: %v; counting the instances the records name", e.Dataset.File, err)
		}
	}
	return sh
}

func (sh SweepShape) Arms() []runstate.Arm {
	if sh.Plan == nil {
		return nil
	}
	out := make([]runstate.Arm, len(sh.Plan.Arms))
	for i, a := range sh.Plan.Arms {
		out[i] = runstate.Arm{Method: a.Method, Model: a.Model, Sample: a.Sample}
	}
	return out
}

// WriteSpecRecord saves the compiled experiment into the run folder, so a report knows the method order and the
// budget anchor.
func WriteSpecRecord(runDir string, e *specs.Experiment) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return runfolder.WriteAtomic(runfolder.Spec(runDir), append(b, '\n'))
}

// LocateResults finds the results file and the run folder NAME means: an existing results file, a folder holding
// results.jsonl, or a run folder under runs.
func LocateResults(name, runs string) (file, dir string, err error) {
	if st, err := os.Stat(name); err == nil {
		if !st.IsDir() {
			return name, filepath.Dir(name), nil
		}
		if _, err := os.Stat(runfolder.Rows(name)); err == nil {
			return runfolder.Rows(name), name, nil
		}
	}
	dir = filepath.Join(runs, name)
	file = runfolder.Rows(dir)
	if _, err := os.Stat(file); err != nil {
		return "", "", fmt.Errorf("no results at %s (run the spec first, or name a results.jsonl)", file)
	}
	return file, dir, nil
}

// readSpecRecord returns the run's recorded spec, or nil when the run folder has none.
func readSpecRecord(dir string) (*specs.Experiment, error) {
	b, err := runfolder.ReadFile(runfolder.Spec(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var e specs.Experiment
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%s: %w", runfolder.Spec(dir), err)
	}
	return &e, nil
}
