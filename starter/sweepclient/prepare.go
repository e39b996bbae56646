package sweepclient

import (
	"fmt"
	"path/filepath"

	"ctxlab/activities"
	"ctxlab/dataset/swebench"
	"ctxlab/demobench"
	"ctxlab/runfolder"
	"ctxlab/specs"
)

// PrepareDataset builds a generated dataset into the run folder if needed, then reads and validates every row, so a
// broken dataset stops the run before anything is paid for.
func PrepareDataset(e *specs.Experiment, runDir string) ([]swebench.Instance, error) {
	switch e.Dataset.Generate {
	case "":
	case "demo":
		res, err := demobench.Generate(runfolder.Dataset(runDir))
		if err != nil {
			return nil, fmt.Errorf("building the demo benchmark: %w", err)
		}
		abs, err := filepath.Abs(res.File)
		if err != nil {
			return nil, err
		}
		e.Dataset.File = abs
	default:
		return nil, fmt.Errorf("%s: dataset: unknown generator %q", e.File, e.Dataset.Generate)
	}
	rows, err := swebench.ReadFile(e.Dataset.File)
	if err != nil {
		return nil, err
	}
	return activities.Select(rows, e.Dataset)
}
