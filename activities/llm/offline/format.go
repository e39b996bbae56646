package offline

import (
	"fmt"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"ctxlab/activities/contexts"
)

// Edit formats a patch answer can take.
const (
	FormatDiff          = "diff"           // a unified diff in a fenced block
	FormatSearchReplace = "search_replace" // Aider-style SEARCH/REPLACE blocks
)

// PatchInput is what the oracle patcher reads: the gold patch, the context the model was shown, and the format the
// prompt asks for.
type PatchInput struct {
	Gold    string
	Context contexts.Context
	Format  string
}

// noPatch is the answer when the context did not show what the gold patch needs.
const noPatch = "I cannot write a fix from this context: the code that needs to change is not shown.\n"

// FormatPatch writes the oracle patcher's unified diff as an answer in format: the diff in a fenced block, or one
// SEARCH/REPLACE block per hunk (the hunk's old lines and new lines, under the file's path).
func FormatPatch(patch, format string) (string, error) {
	if strings.TrimSpace(patch) == "" {
		return noPatch, nil
	}
	switch format {
	case "", FormatDiff:
		return "Here is the fix:\n\n```diff\n" + patch + "```\n", nil
	case FormatSearchReplace:
		files, _, err := gitdiff.Parse(strings.NewReader(patch))
		if err != nil {
			return "", fmt.Errorf("offline: patch does not parse: %w", err)
		}
		var b strings.Builder
		b.WriteString("Here is the fix:\n\n")
		for _, f := range files {
			name := f.NewName
			if f.IsDelete {
				name = f.OldName
			}
			for _, frag := range f.TextFragments {
				var search, replace strings.Builder
				for _, l := range frag.Lines {
					if l.Op != gitdiff.OpAdd {
						search.WriteString(l.Line)
					}
					if l.Op != gitdiff.OpDelete {
						replace.WriteString(l.Line)
					}
				}
				fmt.Fprintf(&b, "%s\n```\n<<<<<<< SEARCH\n%s=======\n%s>>>>>>> REPLACE\n```\n\n", name,
					withNewline(search.String()), withNewline(replace.String()))
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("offline: unknown edit format %q (known: %s, %s)", format, FormatDiff, FormatSearchReplace)
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
