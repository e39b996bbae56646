package steps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"time"

	"ctxlab/activities/executor"
	"ctxlab/dataset/swebench"
	"ctxlab/internal/flock"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
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
	Params   GradeParams       `json:"params"`
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
	Output  NodeOutput `json:"output"`
	Created time.Time  `json:"created"`
}

// gradeMemo keeps the run's grades by key: runs/NAME/grades/xx/KEY.json, with a lock file per key under
// grades/locks. Its outputs reference the run's own content store, so it lives in the run folder.
type gradeMemo struct {
	dir   cas.KeyDir
	locks string
}

func gradeMemoOf(runDir string) gradeMemo {
	root := runfolder.Grades(runDir)
	return gradeMemo{dir: cas.KeyDir{Root: root}, locks: filepath.Join(root, "locks")}
}

func (m gradeMemo) get(key string) (NodeOutput, bool) {
	var e gradeMemoEntry
	if !m.dir.Get(key, &e) || e.Created.IsZero() {
		return NodeOutput{}, false
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
func (j *job) gradeOnce(ctx context.Context, p GradeParams, r GradeRequest,
	grade func() (NodeOutput, error)) (NodeOutput, error) {
	co, err := j.input("checkout")
	if err != nil {
		return NodeOutput{}, err
	}
	sum := sha256.Sum256([]byte(r.Patch))
	key, err := gradeMemoKey{Version: specs.Grade.CodeVersion, Instance: r.Instance, Checkout: co.Ref,
		PatchSHA: hex.EncodeToString(sum[:]), Params: p}.digest()
	if err != nil {
		return NodeOutput{}, err
	}
	memo := gradeMemoOf(j.env.RunDir)
	reuse := func(out NodeOutput) NodeOutput {
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
	if out, ok := memo.get(key); ok {
		return reuse(out), nil
	}
	unlock, err := flock.Lock(ctx, filepath.Join(memo.locks, key[:2], key), 100*time.Millisecond)
	if err != nil {
		return NodeOutput{}, fmt.Errorf("instance %s: waiting for the grade of an equal patch: %w", r.Instance.InstanceID, err)
	}
	defer unlock()
	if out, ok := memo.get(key); ok {
		return reuse(out), nil
	}
	out, err := grade()
	if err != nil {
		return out, err
	}
	// Stored through a JSON round trip, as node memos are, so a reused grade is the very value a fresh one becomes.
	if perr := memo.dir.Put(key, gradeMemoEntry{Output: out, Created: time.Now().UTC()}); perr != nil {
		j.env.Log.Warn().Err(perr).Str("instance", r.Instance.InstanceID).Msg("could not store a grade for reuse")
	}
	return out, nil
}
