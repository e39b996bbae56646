package steps

import (
	"context"
	"errors"
	"path/filepath"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/activities/repo"
	"ctxlab/runfolder"
	"ctxlab/specs"
)

func init() { registerStep(specs.Checkout, checkoutStep) }

// checkoutStep opens (or clones once into the run folder) the instance's repository (a local one of the starter's
// machine from the store, when the starter shipped it) and snapshots it at base_commit
// into the content store. Its output is the snapshot's manifest.
func checkoutStep(ctx context.Context, j *job, _ specs.CheckoutParams) (api.NodeOutput, error) {
	inst, err := j.instance(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	src, err := repo.SourceFor(j.in.Dataset.Repos, inst, filepath.Dir(j.in.Dataset.File))
	if err != nil {
		return api.NodeOutput{}, kindErrorf(errkind.BadInput, "%v", err)
	}
	local, err := j.env.localPath(ctx, src)
	if err != nil {
		return api.NodeOutput{}, kindErrorf(errkind.RepoUnavailable, "instance %s: repository %s: %v", inst.InstanceID, src,
			err)
	}
	r, err := repo.Open(ctx, local, runfolder.Repos(j.env.RunDir))
	if err != nil {
		return api.NodeOutput{}, kindErrorf(repoKind(err), "instance %s: repository %s: %v", inst.InstanceID, src, err)
	}
	m, ref, err := repo.Snapshot(ctx, r, inst.BaseCommit, j.store)
	if err != nil {
		return api.NodeOutput{}, kindErrorf(repoKind(err), "instance %s: %s at %s: %v", inst.InstanceID, src,
			inst.BaseCommit, err)
	}
	row := map[string]any{}
	specs.RepoFiles.Set(row, len(m.Files))
	return api.NodeOutput{Ref: ref, Row: row}, nil
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
	if k, ok := ErrnoKind(err); ok {
		return k
	}
	return errkind.RepoUnavailable
}
