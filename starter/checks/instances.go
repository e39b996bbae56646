package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"golang.org/x/mod/modfile"

	"ctxlab/activities/repo"
	"ctxlab/dataset/swebench"
	"ctxlab/grading"
	"ctxlab/grading/executor"
	"ctxlab/specs"
)

// checkInstances checks each instance's repository (it opens, it holds base_commit: parts.Repos) and that this
// machine can grade it under every grading section of the plan (parts.Graders). An instance whose repository
// cannot be read is not probed further: its row fails at the checkout, whether that is checked or not.
func (r session) checkInstances(ctx context.Context, ds specs.Dataset, gradings []specs.Grading,
	instances []swebench.Instance, reposDir string, parts Parts) {
	if len(instances) == 0 {
		return
	}
	needs := r.instanceNeeds(ds, instances, reposDir, parts)
	if !parts.Graders {
		return
	}
	datasetDir, _ := filepath.Abs(filepath.Dir(ds.File))
	for _, g := range gradings {
		cfg := grading.ExecutorConfig(g)
		cfg.GoProxy = strings.ReplaceAll(cfg.GoProxy, "{dataset_dir}", datasetDir)
		cfg.PythonWheels = strings.ReplaceAll(cfg.PythonWheels, "{dataset_dir}", datasetDir)
		switch g.Executor {
		case "docker":
			images, err := executor.ProbeDocker(ctx, cfg)
			if err != nil {
				r.Fail("grading", "", err.Error(), "")
				continue
			}
			r.checkImages(cfg, instances, images)
			r.Checked = append(r.Checked, "docker engine and images")
		default:
			r.probeLocalRunners(ctx, cfg, instances, needs)
			r.Checked = append(r.Checked, "local test runners")
		}
	}
}

// instanceNeeds is what each instance's tests need (its language and requirements, from its cloned repository;
// empty when unknown), noting the instances not cloned yet and counting the instances by language.
func (r session) instanceNeeds(ds specs.Dataset, instances []swebench.Instance, reposDir string,
	parts Parts) []executor.Needs {
	opened := map[string]*git.Repository{}
	var needs []executor.Needs
	langs := map[string]int{}
	notCloned := 0
	for _, in := range instances {
		n, err := instanceNeeds(in, ds, reposDir, opened)
		if err != nil {
			if parts.Repos {
				r.Fail("instance", in.InstanceID, err.Error(), "")
			}
			needs = append(needs, executor.Needs{}) // not probed
			continue
		}
		if n.Lang == "" {
			if _, _, ok := executor.InstanceSpec(in); ok {
				n.Lang = executor.LangPython // the harness's table and SWE-rebench's install_config are Python's
			} else {
				notCloned++
			}
		}
		langs[n.Lang]++
		needs = append(needs, n)
	}
	if notCloned > 0 {
		r.Note("%d instance(s) have repositories this machine has not cloned yet: their languages (and so their "+
			"test runners) are checked when a run has cloned them", notCloned)
	}
	var counts []string
	for _, l := range []string{executor.LangGo, executor.LangPython} {
		if langs[l] > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", langs[l], l))
		}
	}
	r.Checked = append(r.Checked, fmt.Sprintf("%d instances (%s)", len(instances), strings.Join(counts, ", ")))
	return needs
}

// probeLocalRunners checks that the local executor can run each instance's tests (needs[i] is instances[i]'s; one
// with no language was not probed), one probe per distinct need: importing pytest or reaching a proxy once is
// enough.
func (r session) probeLocalRunners(ctx context.Context, cfg executor.Config, instances []swebench.Instance,
	needs []executor.Needs) {
	done := map[executor.Needs]error{}
	for i, in := range instances {
		n := needs[i]
		if n.Lang == "" {
			continue
		}
		key := executor.Needs{Lang: n.Lang, Requires: n.Requires}
		if cfg.TestCmdFor(n.Repo, n.Lang) != cfg.TestCmdFor("", n.Lang) {
			key.Repo = n.Repo // a command of the repository's own
		}
		err, ok := done[key]
		if !ok {
			err = executor.ProbeLocal(ctx, cfg, n)
			done[key] = err
		}
		if err != nil {
			r.Fail("instance", in.InstanceID, "its "+n.Lang+" tests cannot run here", err.Error())
		}
	}
}

// checkImages names the instances whose images the engine does not hold. Their images differ, so a fix naming
// each would put one line per instance: one missing image is named with its docker pull; several are one problem,
// the instances grouped, the fix naming the first image (the others follow the same pattern, or the rows' own).
func (r session) checkImages(cfg executor.Config, instances []swebench.Instance, images map[string]bool) {
	var missing []swebench.Instance
	var first error
	for _, in := range instances {
		if err := executor.ProbeImage(cfg, in, images); err != nil {
			missing = append(missing, in)
			if first == nil {
				first = err
			}
		}
	}
	switch {
	case len(missing) == 1:
		r.Fail("instance", missing[0].InstanceID, "not gradable", first.Error())
	case len(missing) > 1:
		fix := fmt.Sprintf("starter images pull --spec SPEC (or --dataset FILE) pulls each instance's image (%s's "+
			"is %s), or for a dataset that publishes no images starter images build --spec SPEC (or --dataset FILE)",
			missing[0].InstanceID, executor.ImageOf(cfg.Namespace, missing[0]))
		for _, in := range missing {
			r.Fail("instance", in.InstanceID, "not gradable: its image is not on this machine", fix)
		}
	}
}

// instanceNeeds reads what grading an instance needs from its repository at base_commit: Go when the tree has a
// go.mod (as the grader decides), with requirements to download when its go.sum is not empty. A repository named
// by URL is not cloned for a check: a clone an earlier run made is read, else the language stays unknown.
func instanceNeeds(in swebench.Instance, ds specs.Dataset, reposDir string,
	opened map[string]*git.Repository) (executor.Needs, error) {
	n := executor.Needs{Repo: in.Repo}
	src, err := repo.SourceFor(ds.Repos, in, filepath.Dir(ds.File))
	if err != nil {
		return n, err
	}
	dir := src
	if !isDir(dir) {
		if !strings.Contains(src, "://") && !strings.HasPrefix(src, "git@") {
			return n, fmt.Errorf("repository folder %s does not exist: fix the dataset's repos template or make "+
				"the folder", src)
		}
		if dir = filepath.Join(reposDir, repo.CacheName(src)); !isDir(dir) {
			return n, nil
		}
	}
	r, ok := opened[dir]
	if !ok {
		var err error
		if r, err = git.PlainOpen(dir); err != nil {
			return n, fmt.Errorf("repository %s cannot be opened: %v", src, err)
		}
		opened[dir] = r
	}
	_, isGo, err := repo.FileAt(r, in.BaseCommit, "go.mod")
	if errors.Is(err, repo.ErrCommitNotFound) {
		return n, fmt.Errorf("base_commit %s is not in %s: fetch it (a shallow or stale clone), or fix the "+
			"dataset row", in.BaseCommit, src)
	}
	if err != nil {
		return n, err
	}
	n.Lang = executor.LangPython
	if isGo {
		n.Lang = executor.LangGo
		sum, _, err := repo.FileAt(r, in.BaseCommit, "go.sum")
		if err != nil {
			return n, err
		}
		// An older module comes without go.sum: its go.mod's requirements are downloaded all the same.
		goMod, _, err := repo.FileAt(r, in.BaseCommit, "go.mod")
		if err != nil {
			return n, err
		}
		mf, _ := modfile.ParseLax("go.mod", goMod, nil)
		n.Requires = len(strings.TrimSpace(string(sum))) > 0 || (mf != nil && len(mf.Require) > 0)
	}
	return n, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
