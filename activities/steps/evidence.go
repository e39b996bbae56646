package steps

import (
	"context"
	"sort"
	"strings"

	"ctxlab/activities/api"
	"ctxlab/activities/llm"
	"ctxlab/activities/llm/offline"
	"ctxlab/activities/search"
	"ctxlab/activities/tokens"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

func init() {
	registerStep(specs.Evidence, evidenceStep)
}

// EvidenceSnippet is one snippet of E, with the search that found it.
type EvidenceSnippet struct {
	search.Snippet
	Search  int    `json:"search"`
	Kind    string `json:"search_kind"`
	Pattern string `json:"pattern"`
}

// EvidenceResult is the evidence step's output.
type EvidenceResult struct {
	Answer    string            `json:"answer"`
	Plan      llm.SearchPlan    `json:"plan"`
	PlanError string            `json:"plan_error,omitempty"`
	Snippets  []EvidenceSnippet `json:"snippets"`
}

// evidenceStep is CQ2-CARE's evidence step: the model reads the issue and the selected files F (input files) and plans
// typed searches; each search is a fixed-string grep over the repository at base_commit; from each search's hits at
// most NewFiles files not yet shown are taken, and the enclosing definition (or a line window) around the hit becomes
// a snippet. It stops once the snippets cover MaxFiles files. An unparseable plan counts as empty.
//
// Prompt fields: .Issue, .Files (the selected files, each under a [path] header), .Paths (their paths, one per
// line), .MaxSearches, .MaxStrings.
func evidenceStep(ctx context.Context, j *job, p specs.EvidenceParams) (api.NodeOutput, error) {
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	var sel Selection
	if err := j.loadJSON(ctx, "files", &sel); err != nil {
		return api.NodeOutput{}, err
	}
	read := j.reader(ctx, m)
	var shown strings.Builder
	for _, f := range sel.Files {
		text, ok := read(f)
		if !ok {
			continue
		}
		cut, _, err := tokens.Truncate(modelTokenizer(p.ModelParams), text, p.FileCap)
		if err != nil {
			return api.NodeOutput{}, permanent(api.ErrBadInput, err)
		}
		shown.WriteString("[" + f + "]\n" + cut)
		if !strings.HasSuffix(cut, "\n") {
			shown.WriteString("\n")
		}
		shown.WriteString("\n")
	}
	msgs, err := renderPrompt(p.Prompt, j.in.Step, struct {
		Issue, Files, Paths     string
		MaxSearches, MaxStrings int
	}{inst.ProblemStatement, shown.String(), strings.Join(sel.Files, "\n"), p.MaxSearches, p.MaxStrings})
	if err != nil {
		return api.NodeOutput{}, err
	}
	req := llm.Request{Task: specs.Evidence.Task, Messages: msgs, Sample: p.Sample,
		Offline: &offline.EvidenceInput{Issue: inst.ProblemStatement, Files: sel.Files, Read: read,
			MaxSearches: p.MaxSearches, MaxStrings: p.MaxStrings}}
	resp, row, err := j.callModel(ctx, p.ModelParams, req)
	if err != nil {
		return api.NodeOutput{}, err
	}
	res := EvidenceResult{Answer: resp.Text}
	plan, perr := llm.ParseSearchPlan(resp.Text, p.MaxSearches, p.MaxStrings)
	if perr != nil {
		res.PlanError = perr.Error()
	} else {
		res.Plan = plan
	}
	var files []search.File
	for _, e := range m.Files {
		if e.Mode == "symlink" || e.Size > 1<<20 {
			continue
		}
		if text, ok := read(e.Path); ok {
			files = append(files, search.File{Path: e.Path, Text: text})
		}
	}
	res.Snippets = CollectEvidence(files, sel.Files, res.Plan, p.NewFiles, p.MaxFiles, p.Window)
	ref, err := cas.PutJSON(ctx, j.store, res)
	if err != nil {
		return api.NodeOutput{}, err
	}
	covered := map[string]bool{}
	for _, s := range res.Snippets {
		covered[s.Path] = true
	}
	specs.EvidenceSearches.Set(row, len(res.Plan.Searches))
	specs.EvidenceFiles.Set(row, len(covered))
	if res.PlanError != "" {
		specs.EvidencePlanError.Set(row, res.PlanError)
	}
	return api.NodeOutput{Ref: ref, Row: row}, nil
}

// CollectEvidence runs a plan's searches in order over files. Files in shown (the selected files) and files an
// earlier search took are not taken again; each search takes at most newFiles files, and collection stops once the
// snippets cover maxFiles files. A definition search puts files that declare one of its strings first; other
// searches rank files by their number of matching lines. The snippet is taken around the file's first declaring line
// (definition searches) or first hit.
func CollectEvidence(files []search.File, shown []string, plan llm.SearchPlan, newFiles, maxFiles, window int) []EvidenceSnippet {
	taken := map[string]bool{}
	for _, f := range shown {
		taken[f] = true
	}
	text := map[string]string{}
	for _, f := range files {
		text[f.Path] = f.Text
	}
	var out []EvidenceSnippet
	covered := 0
	for si, s := range plan.Searches {
		if covered >= maxFiles {
			break
		}
		hits := search.Grep(files, s.Strings)
		order, byFile := search.Files(hits)
		type cand struct {
			path    string
			hit     search.Hit
			defines bool
			n       int
		}
		var cands []cand
		for _, path := range order {
			if taken[path] {
				continue
			}
			hs := byFile[path]
			c := cand{path: path, hit: hs[0], n: len(hs)}
			if s.Kind == llm.SearchDefinition {
				lines := strings.Split(text[path], "\n")
				for _, h := range hs {
					if search.DefinesName(lines[h.Line-1], h.Pattern) {
						c.hit, c.defines = h, true
						break
					}
				}
			}
			cands = append(cands, c)
		}
		sort.SliceStable(cands, func(a, b int) bool {
			if cands[a].defines != cands[b].defines {
				return cands[a].defines
			}
			return cands[a].n > cands[b].n
		})
		took := 0
		for _, c := range cands {
			if took >= newFiles || covered >= maxFiles {
				break
			}
			sn := search.Around(c.path, text[c.path], c.hit.Line, window)
			out = append(out, EvidenceSnippet{Snippet: sn, Search: si, Kind: s.Kind, Pattern: c.hit.Pattern})
			taken[c.path] = true
			took++
			covered++
		}
	}
	return out
}
