package steps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"ctxlab/activities/api"
	"ctxlab/activities/inventory"
	"ctxlab/activities/llm"
	"ctxlab/activities/llm/offline"
	"ctxlab/activities/repo"
	"ctxlab/patch/diff"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

func init() {
	registerStep(specs.Localize, localizeStep)
	registerStep(specs.Intersect, intersectStep)
	registerStep(specs.Trim, trimStep)
}

// Ranking is one localization sample: the model's answer and the repository paths parsed from it, in rank order.
type Ranking struct {
	Sample int    `json:"sample"`
	Answer string `json:"answer"`
	// Paths are the ranked paths the repository holds; Dropped the paths named that it does not.
	Paths   []string `json:"paths"`
	Dropped []string `json:"dropped,omitempty"`
}

// localizeStep is one of CQ2-CARE's three independent localization samples (step 2): given the issue and the inventory,
// the model ranks the files that must change. Each sample is its own node, so a crash never pays for a finished
// sample again. Paths the repository does not hold are dropped; an answer with none counts as empty.
//
// Prompt fields: .Issue, .Inventory (one path per line), .MaxFiles.
func localizeStep(ctx context.Context, j *job, p specs.LocalizeParams) (api.NodeOutput, error) {
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	inv, err := j.loadInventory(ctx, "inventory")
	if err != nil {
		return api.NodeOutput{}, err
	}
	msgs, err := renderPrompt(p.Prompt, j.in.Step, struct {
		Issue, Inventory string
		MaxFiles         int
	}{inst.ProblemStatement, inv.Text(), p.MaxFiles})
	if err != nil {
		return api.NodeOutput{}, err
	}
	req := llm.Request{Task: specs.Localize.Task, Messages: msgs, Sample: p.Sample,
		Offline: &offline.LocalizeInput{Issue: inst.ProblemStatement, Paths: inv.Paths,
			Read: j.reader(ctx, m), TopK: p.MaxFiles}}
	resp, row, err := j.callModel(ctx, p.ModelParams, req)
	if err != nil {
		return api.NodeOutput{}, err
	}
	rk := Ranking{Sample: p.Sample, Answer: resp.Text}
	rk.Paths = llm.ParseRankedPaths(resp.Text, func(path string) bool { _, ok := m.Lookup(path); return ok })
	for _, path := range llm.ParseRankedPaths(resp.Text, nil) {
		if _, ok := m.Lookup(path); !ok {
			rk.Dropped = appendNew(rk.Dropped, path)
		}
	}
	ref, err := cas.PutJSON(ctx, j.store, rk)
	if err != nil {
		return api.NodeOutput{}, err
	}
	return api.NodeOutput{Ref: ref, Row: row}, nil
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// Selection is the set of files F a method shows whole, in order.
type Selection struct {
	Files []string `json:"files"`
	// Fallback is true when the two-sample intersection was empty and F came from sample L0.
	Fallback bool `json:"fallback,omitempty"`
}

// intersectStep computes F from three localization samples (inputs l0, l1, l2): the paths named in both L1 and L2,
// tests and docs excluded, ordered by the sum of their reciprocal ranks in L1 and L2. When that is empty, F is L0
// (without tests and docs, unless that leaves nothing) and the row's fallback field says so. The row also gets F's
// size and its precision, recall and F1 against the files the gold patch edits.
func intersectStep(ctx context.Context, j *job, _ specs.IntersectParams) (api.NodeOutput, error) {
	var l [3]Ranking
	for i := range l {
		if err := j.loadJSON(ctx, fmt.Sprintf("l%d", i), &l[i]); err != nil {
			return api.NodeOutput{}, err
		}
	}
	sel := Selection{Files: IntersectRanked(l[1].Paths, l[2].Paths)}
	if len(sel.Files) == 0 {
		sel.Files, sel.Fallback = codeOnly(l[0].Paths), true
	}
	return j.putSelection(ctx, sel, nil)
}

// trimStep is the single-sample ablation: one localization sample (input sample), tests and docs excluded, cut to the
// number of files of another selection (input like, typically the intersection), or to params.count.
func trimStep(ctx context.Context, j *job, p specs.TrimParams) (api.NodeOutput, error) {
	var rk Ranking
	if err := j.loadJSON(ctx, "sample", &rk); err != nil {
		return api.NodeOutput{}, err
	}
	n := p.Count
	if n <= 0 {
		var like Selection
		if err := j.loadJSON(ctx, "like", &like); err != nil {
			return api.NodeOutput{}, err
		}
		n = max(1, len(like.Files))
	}
	all := codeOnly(rk.Paths)
	sel := Selection{Files: all[:min(n, len(all))]}
	return j.putSelection(ctx, sel, all)
}

// IntersectRanked returns the paths in both lists, tests and docs excluded, by the sum of their reciprocal ranks
// (1/rank in a plus 1/rank in b), highest first; ties by path.
func IntersectRanked(a, b []string) []string {
	rank := func(list []string) map[string]int {
		r := map[string]int{}
		for i, p := range list {
			if _, seen := r[p]; !seen {
				r[p] = i + 1
			}
		}
		return r
	}
	ra, rb := rank(a), rank(b)
	type scored struct {
		path string
		rr   float64
	}
	var both []scored
	for p, i := range ra {
		if k, ok := rb[p]; ok && !inventory.IsTest(p) && !inventory.IsDoc(p) {
			both = append(both, scored{p, 1/float64(i) + 1/float64(k)})
		}
	}
	sort.Slice(both, func(i, j int) bool {
		if both[i].rr != both[j].rr {
			return both[i].rr > both[j].rr
		}
		return both[i].path < both[j].path
	})
	out := make([]string, len(both))
	for i, s := range both {
		out[i] = s.path
	}
	return out
}

// codeOnly drops tests and docs from a ranked list, keeping the list as it is if that would leave nothing.
func codeOnly(paths []string) []string {
	var out []string
	for _, p := range paths {
		if !inventory.IsTest(p) && !inventory.IsDoc(p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return append([]string(nil), paths...)
	}
	return out
}

// LocScores are precision, recall and F1 of selected files against the gold files.
type LocScores struct{ Precision, Recall, F1 float64 }

// ScoreFiles compares a selection with the gold files (an empty selection scores 0).
func ScoreFiles(selected, gold []string) LocScores {
	g := map[string]bool{}
	for _, p := range gold {
		g[p] = true
	}
	hit := 0
	seen := map[string]bool{}
	for _, p := range selected {
		if g[p] && !seen[p] {
			hit++
		}
		seen[p] = true
	}
	var s LocScores
	if len(seen) > 0 {
		s.Precision = float64(hit) / float64(len(seen))
	}
	if len(g) > 0 {
		s.Recall = float64(hit) / float64(len(g))
	}
	if s.Precision+s.Recall > 0 {
		s.F1 = 2 * s.Precision * s.Recall / (s.Precision + s.Recall)
	}
	return s
}

// putSelection stores a selection with its row fields; untrimmed, when given, is scored as loc_f1_untrimmed.
func (j *job) putSelection(ctx context.Context, sel Selection, untrimmed []string) (api.NodeOutput, error) {
	inst, err := j.instance(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	gold, err := diff.ChangedFiles(inst.Patch)
	if err != nil {
		return api.NodeOutput{}, permanentf(api.ErrBadInput, "instance %s: gold patch: %v", inst.InstanceID, err)
	}
	if sel.Files == nil {
		sel.Files = []string{}
	}
	ref, err := cas.PutJSON(ctx, j.store, sel)
	if err != nil {
		return api.NodeOutput{}, err
	}
	s := ScoreFiles(sel.Files, gold)
	row := map[string]any{}
	specs.FilesSelected.Set(row, len(sel.Files))
	specs.Fallback.Set(row, sel.Fallback)
	specs.LocPrecision.Set(row, s.Precision)
	specs.LocRecall.Set(row, s.Recall)
	specs.LocF1.Set(row, s.F1)
	if untrimmed != nil {
		specs.LocF1Untrimmed.Set(row, ScoreFiles(untrimmed, gold).F1)
	}
	return api.NodeOutput{Ref: ref, Row: row}, nil
}

// loadJSON decodes what a named input points at.
func (j *job) loadJSON(ctx context.Context, name string, v any) error {
	in, err := j.input(name)
	if err != nil {
		return err
	}
	if err := cas.GetJSON(ctx, j.store, in.Ref, v); err != nil {
		return fmt.Errorf("input %s: %w", name, err)
	}
	return nil
}

// reader returns a function reading files of the snapshot, each once per attempt from the process's text cache
// (Env.Text), which reads the store on a miss. A file whose blob the store does not have reads as
// missing (and is logged); any other read error (a transient store failure) reads as missing too, for the callers'
// sake, but fails the attempt when its body returns (job.readFailure), so the attempt is retried instead of a
// context without the file being memoized for good.
func (j *job) reader(ctx context.Context, m repo.Manifest) func(path string) (string, bool) {
	cache := map[string]string{}
	text := j.env.Text
	return func(path string) (string, bool) {
		if t, ok := cache[path]; ok {
			return t, true
		}
		if _, ok := m.Lookup(path); !ok {
			return "", false
		}
		t, err := text.Read(ctx, j.store, m, path)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				j.failRead(fmt.Errorf("instance %s: %w", j.in.Instance.ID, err))
			}
			j.env.Log.Warn().Err(err).Str("path", path).Str("step", j.in.Step).Msg("reading a snapshot file")
			return "", false
		}
		cache[path] = t
		return t, true
	}
}
