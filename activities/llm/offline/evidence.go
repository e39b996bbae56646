package offline

import (
	"encoding/json"
	"slices"
	"strings"

	"ctxlab/activities/inventory"
)

// EvidenceInput is what the identifier-based evidence planner reads: the issue and the selected files F.
type EvidenceInput struct {
	Issue string
	Files []string
	// Read returns a file's text at base_commit.
	Read func(path string) (string, bool)
	// MaxSearches and MaxStrings bound the plan (4 and 8 when 0).
	MaxSearches, MaxStrings int
}

type search struct {
	Kind    string   `json:"kind"`
	Strings []string `json:"strings"`
}

// PlanEvidence is the identifier-based evidence planner. From the issue it takes the identifiers it names, the
// messages it quotes and the command-line flags it mentions, and plans typed searches: the definitions of named
// identifiers that the selected files do not declare, the quoted messages, the flags, and the callers of functions
// that the selected files declare and the issue names. The answer is a JSON plan in a fenced block with a sentence
// before it, as the evidence prompt asks.
func PlanEvidence(in EvidenceInput) string {
	maxS, maxN := in.MaxSearches, in.MaxStrings
	if maxS <= 0 {
		maxS = 4
	}
	if maxN <= 0 {
		maxN = 8
	}
	var selected strings.Builder
	for _, f := range in.Files {
		if t, ok := in.Read(f); ok {
			selected.WriteString(t)
			selected.WriteString("\n")
		}
	}
	sel := selected.String()
	var defs, callers []string
	for _, id := range Identifiers(in.Issue) {
		if declares(sel, id) {
			callers = append(callers, id+"(")
		} else {
			defs = append(defs, id)
		}
	}
	// Functions the selected files call but do not declare, named with a word of the issue (displayWidth when the
	// issue is about widths): their definitions are likely where the behaviour comes from.
	issueWords := inventory.Set(in.Issue)
	for _, id := range calledNames(sel) {
		if declares(sel, id) || slices.Contains(defs, id) {
			continue
		}
		for _, w := range inventory.Words(id) {
			if issueWords[w] {
				defs = append(defs, id)
				break
			}
		}
	}
	var quoted []string
	seen := map[string]bool{}
	for _, m := range quotedRe.FindAllStringSubmatch(in.Issue, -1) {
		q := strings.TrimSpace(m[1])
		// Messages, not values: at least two words and some letters.
		if strings.Count(q, " ") >= 1 && strings.IndexFunc(q, isLetter) >= 0 && !seen[q] {
			seen[q] = true
			quoted = append(quoted, q)
		}
	}
	var flags []string
	for _, m := range flagRe.FindAllStringSubmatch(in.Issue, -1) {
		f := `"` + m[1] + `"`
		if !seen[f] {
			seen[f] = true
			flags = append(flags, f)
		}
	}
	var plan struct {
		Searches []search `json:"searches"`
	}
	for _, s := range []search{{"definition", defs}, {"string", quoted}, {"string", flags}, {"callers", callers}} {
		if len(s.Strings) == 0 || len(plan.Searches) >= maxS {
			continue
		}
		if len(s.Strings) > maxN {
			s.Strings = s.Strings[:maxN]
		}
		plan.Searches = append(plan.Searches, s)
	}
	if plan.Searches == nil {
		plan.Searches = []search{}
	}
	b, _ := json.MarshalIndent(plan, "", "  ")
	return "I would look up these places before editing:\n\n```json\n" + string(b) + "\n```\n"
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// calledNames returns the names called in code as name( (not after a dot: methods of other values and package
// functions are left out), in order of first call, without keywords.
func calledNames(code string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range bareCallRe.FindAllStringSubmatch(code, -1) {
		id := m[1]
		if len(id) < 4 || keywordGo[id] || seen[id] {
			continue
		}
		switch id {
		case "func", "return", "switch", "select", "print", "panic", "recover", "len", "cap", "make", "new", "append",
			"copy", "delete", "close", "string", "byte", "rune", "int64", "uint64", "float64", "error":
			continue
		}
		seen[id] = true
		out = append(out, id)
	}
	return out
}
