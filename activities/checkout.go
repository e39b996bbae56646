package activities

import (
	"context"
	"errors"
	"path/filepath"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/repo"
	"ctxlab/runfolder"
)

// Checkout opens (or clones once into the run folder) the instance's repository and snapshots it at base_commit
// into the content store. Its output is the snapshot's manifest.
func (a *Activities) Checkout(ctx context.Context, in NodeInput) (NodeOutput, error) {
	return a.node(ctx, in, "checkout", func(ctx context.Context, j *job) (NodeOutput, error) {
		inst, err := j.instance(ctx)
		if err != nil {
			return NodeOutput{}, err
		}
		src := repo.SourceFor(in.Dataset.Repos, inst, filepath.Dir(in.Dataset.File))
		r, err := repo.Open(ctx, src, runfolder.Repos(a.RunDir(in.Run)))
		if err != nil {
			return NodeOutput{}, kindErrorf(repoKind(err), "instance %s: repository %s: %v", inst.InstanceID, src, err)
		}
		m, ref, err := repo.Snapshot(ctx, r, inst.BaseCommit, j.store)
		if err != nil {
			return NodeOutput{}, kindErrorf(repoKind(err), "instance %s: %s at %s: %v", inst.InstanceID, src,
				inst.BaseCommit, err)
		}
		return NodeOutput{Ref: ref, Row: map[string]any{"repo_files": len(m.Files)}}, nil
	})
}

// snapshot loads the manifest a checkout input points at.
func (j *job) snapshot(ctx context.Context) (repo.Manifest, error) {
	in, err := j.input("checkout")
	if err != nil {
		return repo.Manifest{}, err
	}
	return repo.LoadManifest(ctx, j.store, in.Ref)
}

// repoKind is the kind of a checkout's failure: a base_commit the repository lacks, a full disk or a refused
// permission, else a repository that cannot be opened or read. All are the machine's (or its clone's), never the
// model's.
func repoKind(err error) errkind.Kind {
	if errors.Is(err, repo.ErrCommitNotFound) {
		return errkind.MissingCommit
	}
	if k, ok := errkind.KindOf(err); ok {
		return k
	}
	if k, ok := errnoKind(err); ok {
		return k
	}
	return errkind.RepoUnavailable
}
