// Package offline is ctxlab's deterministic stand-in for a language model. It needs no network and is not a
// language model: it answers "did the context contain what a perfect editor needed?", which is what the demo, the
// tests and CI use.
package offline

import (
	"fmt"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"ctxlab/activities/contexts"
)

// PatchResult is the oracle patcher's answer.
type PatchResult struct {
	// Patch holds the gold hunks the context allowed, as a unified diff ("" when none).
	Patch string
	// Emitted and Total count gold hunks.
	Emitted, Total int
}

// OraclePatch emits each hunk of the gold patch only when every line the hunk needs (its context and removed
// lines) appears verbatim, up to trailing whitespace, among the lines the context shows of that file. A hunk that
// creates a new file needs no lines; it is emitted when some hunk that edits an existing file was, or when the
// patch only creates files and the context shows any repository text.
func OraclePatch(gold string, ctx contexts.Context) (PatchResult, error) {
	files, _, err := gitdiff.Parse(strings.NewReader(gold))
	if err != nil {
		return PatchResult{}, fmt.Errorf("gold patch does not parse: %w", err)
	}
	var res PatchResult
	var kept []*gitdiff.File
	var created []*gitdiff.File
	for _, f := range files {
		if f.IsNew {
			res.Total += max(1, len(f.TextFragments))
			created = append(created, f)
			continue
		}
		shown := ctx.LinesOf(f.OldName)
		var frags []*gitdiff.TextFragment
		for _, frag := range f.TextFragments {
			res.Total++
			if fragmentShown(frag, shown) {
				frags = append(frags, frag)
			}
		}
		if len(frags) > 0 {
			res.Emitted += len(frags)
			cp := *f
			cp.TextFragments = frags
			kept = append(kept, &cp)
		}
	}
	onlyCreates := len(created) == len(files)
	if len(created) > 0 && (len(kept) > 0 || (onlyCreates && len(ctx.Blocks) > 0)) {
		for _, f := range created {
			res.Emitted += max(1, len(f.TextFragments))
		}
		kept = append(kept, created...)
	}
	var b strings.Builder
	for _, f := range kept {
		b.WriteString(f.String())
	}
	res.Patch = b.String()
	return res, nil
}

func fragmentShown(frag *gitdiff.TextFragment, shown map[string]bool) bool {
	for _, l := range frag.Lines {
		if l.Op == gitdiff.OpAdd {
			continue
		}
		t := strings.TrimRight(strings.TrimSuffix(l.Line, "\n"), " \t\r")
		if strings.TrimSpace(t) == "" {
			continue
		}
		if !shown[t] {
			return false
		}
	}
	return true
}
