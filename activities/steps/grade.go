package steps

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/repo"
	"ctxlab/grading"
	"ctxlab/grading/executor"
	"ctxlab/specs"
)

// The grade step, the adapter side of package grading: it reads the instance, the repository snapshot and the
// patch from the store, puts the spec's grading settings in this machine's terms (goProxy, pythonWheels), grades an
// equal patch once (gradememo.go), and says whose failure a grade's error is.

func init() { registerStep(specs.Grade, gradeStep) }

// gradeStep grades the node's patch with grading.Grade: a fresh worktree at base_commit (materialized from the
// checkout's snapshot) with the model patch and the test patch applied, FAIL_TO_PASS and PASS_TO_PASS run by the
// spec's executor, resolved decided from the per-test results, never from the exit code. Its output is the test
// log; its row fields say how the patch applied and how every run went.
func gradeStep(ctx context.Context, j *job, p specs.GradeParams) (api.NodeOutput, error) {
	exec, err := j.newExecutor(p.Grading.Executor)
	if err != nil {
		return api.NodeOutput{}, permanent(api.ErrUnsupported, err)
	}
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	pin, err := j.input("patch")
	if err != nil {
		return api.NodeOutput{}, err
	}
	patch, err := j.store.Get(ctx, pin.Ref)
	if err != nil {
		return api.NodeOutput{}, err
	}
	cleanStaleOnce(j.env.Log)
	if p.Grading.GoProxy, err = j.goProxy(ctx, p.Grading.GoProxy); err != nil {
		return api.NodeOutput{}, err
	}
	if p.Grading.PythonWheels, err = j.pythonWheels(ctx, p.Grading.PythonWheels); err != nil {
		return api.NodeOutput{}, err
	}
	req := grading.Request{Instance: inst, Patch: string(patch), PatchRef: pin.Ref,
		Grading: p.Grading, Materialize: func(ctx context.Context, dir string) error {
			return repo.Materialize(ctx, j.store, m, dir)
		}, Heartbeat: j.env.Heartbeat}
	// Byte-identical patches of the instance under the same settings are graded once (gradememo.go).
	out, err := j.gradeOnce(ctx, p, req, func() (api.NodeOutput, error) {
		graded, err := grading.Grade(ctx, exec, j.store, req)
		return api.NodeOutput{Ref: graded.Log, Row: graded.Row}, err
	})
	if errors.Is(err, executor.ErrTestPatch) {
		return out, permanent(api.ErrBadInput, err)
	}
	// Named once: some executor errors name the instance already, others do not.
	if err != nil && !strings.HasPrefix(err.Error(), "instance "+inst.InstanceID+":") {
		err = fmt.Errorf("instance %s: %w", inst.InstanceID, err)
	}
	return out, err
}

// goProxy is the GOPROXY setting with {dataset_dir} replaced and each file:// folder made the absolute folder it is
// on this machine (a proxy folder the starter shipped is unpacked from the store), whatever folder the spec named
// the dataset from.
func (j *job) goProxy(ctx context.Context, setting string) (string, error) {
	setting = strings.ReplaceAll(setting, "{dataset_dir}", filepath.Dir(j.in.Dataset.File))
	var b strings.Builder
	for setting != "" {
		end := strings.IndexAny(setting, ",|")
		if end < 0 {
			end = len(setting)
		}
		entry := setting[:end]
		if folder, ok := strings.CutPrefix(entry, "file://"); ok {
			local, err := j.env.localPath(ctx, folder)
			if err != nil {
				return "", fmt.Errorf("grading.goproxy: %w", err)
			}
			abs, err := filepath.Abs(local)
			if err != nil {
				return "", err
			}
			entry = "file://" + filepath.ToSlash(abs)
		}
		b.WriteString(entry)
		b.WriteString(setting[end:min(end+1, len(setting))]) // the separator, as given
		setting = setting[min(end+1, len(setting)):]
	}
	return b.String(), nil
}

// pythonWheels is the grading.python_wheels setting on this machine: a package index URL as given, a folder of wheels
// ({dataset_dir} filled in) where the starter shipped it (Env.Shipped), made absolute.
func (j *job) pythonWheels(ctx context.Context, setting string) (string, error) {
	if setting == "" || strings.Contains(setting, "://") {
		return setting, nil
	}
	local, err := j.env.localPath(ctx, strings.ReplaceAll(setting, "{dataset_dir}", filepath.Dir(j.in.Dataset.File)))
	if err != nil {
		return "", fmt.Errorf("grading.python_wheels: %w", err)
	}
	return filepath.Abs(local)
}

var staleOnce sync.Once

// cleanStaleOnce removes, once per process, grading folders left by killed processes.
func cleanStaleOnce(log zerolog.Logger) {
	staleOnce.Do(func() {
		if n, err := executor.CleanStale(""); err != nil {
			log.Warn().Err(err).Msg("cleaning stale grading folders")
		} else if n > 0 {
			log.Info().Int("removed", n).Msg("removed grading folders of killed processes")
		}
	})
}
