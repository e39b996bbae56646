package steps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"ctxlab/activities/api"
	"ctxlab/dataset/swebench"
	"ctxlab/grading"
	"ctxlab/grading/executor"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/store/objects"
)

// newExecutor returns the grading executor a spec names: Env.Executor's (tests count test runs), else
// executor.New's.
func (j *job) newExecutor(name string) (executor.Executor, error) {
	if j.env.Executor != nil {
		return j.env.Executor(name)
	}
	return executor.New(name)
}

// gradeMemoKey is everything a grade's outcome depends on: the whole instance (its id, base commit, test patch and
// listed tests), the repository snapshot the worktree is built from, the patch's bytes and the grade step's
// parameters (the grading settings). Which method or node produced the patch is not part of it, so methods whose
// patches are byte-identical share one grade, the way equal steps share one node.
type gradeMemoKey struct {
	Version  string            `json:"version"`
	Instance swebench.Instance `json:"instance"`
	Checkout cas.Ref           `json:"checkout"`
	PatchSHA string            `json:"patch_sha256"`
	Params   specs.GradeParams `json:"params"`
}

// digest is the key's hex SHA-256 (struct fields marshal in declaration order: a stable encoding).
func (k gradeMemoKey) digest() (string, error) {
	b, err := json.Marshal(k)
	if err != nil {
		return "", fmt.Errorf("grade memo key of instance %s: %w", k.Instance.InstanceID, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// gradeMemoEntry is a stored grade.
type gradeMemoEntry struct {
	Output  api.NodeOutput `json:"output"`
	Created time.Time      `json:"created"`
}

// gradeMemo keeps the run's grades by key: grades/xx/KEY.json of the run's objects (the run folder on one machine,
// the shared store across several), with a lock per key under grades/locks. Its outputs reference the run's own
// content store, so it is the run's.
type gradeMemo struct{ objects.Keyed }

func gradeMemoOf(objs objects.Store) gradeMemo {
	return gradeMemo{objects.Keyed{S: objs, Prefix: runfolder.GradesKey, Locks: runfolder.GradeLocksKey,
		Durable: true}}
}

func (m gradeMemo) get(ctx context.Context, key string) (api.NodeOutput, bool) {
	var e gradeMemoEntry
	if !m.Get(ctx, key, &e) || e.Created.IsZero() {
		return api.NodeOutput{}, false
	}
	return e.Output, true
}

// gradeOnce returns the grade of r: the stored one when an equal patch of the instance was already graded under the
// same settings, else grade's, which is then stored. The key's lock is held while grading, so two methods grading
// the same patch at once (in this process or another sharing the run folder) grade it once: the second waits,
// heartbeating, and reuses the first's grade. A failed grade is not stored, so a waiter grades again itself.
//
// A reused grade carries this request's patch_ref; every other row field is the stored grade's. Whether it was
// reused depends on which method got there first, so it is not on the row: the attempt log's "reused" field and
// the worker log say it.
func (j *job) gradeOnce(ctx context.Context, p specs.GradeParams, r grading.Request,
	grade func() (api.NodeOutput, error)) (api.NodeOutput, error) {
	co, err := j.input("checkout")
	if err != nil {
		return api.NodeOutput{}, err
	}
	sum := sha256.Sum256([]byte(r.Patch))
	key, err := gradeMemoKey{Version: specs.Grade.CodeVersion, Instance: r.Instance, Checkout: co.Ref,
		PatchSHA: hex.EncodeToString(sum[:]), Params: p}.digest()
	if err != nil {
		return api.NodeOutput{}, err
	}
	memo := gradeMemoOf(j.env.objects())
	reuse := func(out api.NodeOutput) api.NodeOutput {
		*j.reused = key
		j.env.Log.Debug().Str("instance", r.Instance.InstanceID).Str("node", j.in.Node).Str("grade_key", key).
			Msg("patch already graded; reusing its grade")
		out.Row = maps.Clone(out.Row)
		if out.Row == nil {
			out.Row = map[string]any{}
		}
		if r.PatchRef != "" {
			specs.PatchRef.Set(out.Row, string(r.PatchRef))
		}
		return out
	}
	if out, ok := memo.get(ctx, key); ok {
		return reuse(out), nil
	}
	unlock, err := memo.Lock(ctx, key)
	if err != nil {
		return api.NodeOutput{}, fmt.Errorf("instance %s: waiting for the grade of an equal patch: %w", r.Instance.InstanceID, err)
	}
	defer unlock()
	if out, ok := memo.get(ctx, key); ok {
		return reuse(out), nil
	}
	out, err := grade()
	if err != nil {
		return out, err
	}
	// Stored once: a grade another worker stored first (its lock lost with its machine) is the one every row of the
	// patch carries.
	entry := gradeMemoEntry{Output: out, Created: time.Now().UTC()}
	created, perr := memo.Create(ctx, key, &entry, func(stored any) bool {
		return !stored.(*gradeMemoEntry).Created.IsZero()
	})
	if perr != nil {
		j.env.Log.Warn().Err(perr).Str("instance", r.Instance.InstanceID).Msg("could not store a grade for reuse")
	}
	if !created && perr == nil {
		return reuse(entry.Output), nil
	}
	return out, nil
}
