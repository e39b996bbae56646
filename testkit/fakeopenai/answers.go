package fakeopenai

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"ctxlab/internal/offlinetask"
	"ctxlab/specs"
)

// DefaultAnswer answers from the prompt alone, deterministically, in the shapes a model uses, through the prompt
// answer registered for the request's task with internal/offlinetask (the extension point the fake shares with the
// offline stand-in), or "OK" when the task has none. The built-in answers are:
//   - localize: the paths listed in the prompt, ranked by how many words of the path the issue text shares (ties
//     keep prompt order), at most 10 (or the N of "at most N paths" in the prompt), those sharing none left out unless none share any (then the first 3);
//   - evidence: a JSON plan of the identifiers in the issue text (CamelCase, snake_case, or followed by "("):
//     a definition search for up to 8 of them and a callers search for the first 3;
//   - patch: an empty ```diff fence (the fake cannot edit code).
//
// The issue text is the part of the prompt between <issue> and </issue>, or under a heading or label "Issue", or
// else every line of the prompt that is not a path.
func DefaultAnswer(req ChatRequest) string {
	if a, ok := offlinetask.Lookup(req.Task()); ok && a.FromPrompt != nil {
		return a.FromPrompt(req.Prompt())
	}
	return "OK"
}

// The built-in tasks' prompt answers, and the wording that names each when a call has no task header. Registration
// order is the order Guess tries them in: a prompt asking for a diff is a patch prompt even if it also says "rank".
func init() {
	offlinetask.Register(specs.Patch.Task, offlinetask.Answerer{
		FromPrompt: func(string) string { return "I cannot write a reliable patch from this context.\n\n```diff\n```\n" },
		Markers:    []string{"<<<<<<< search", "unified diff", "```diff", "git diff", "search/replace", "write a patch", "the patch"}})
	offlinetask.Register(specs.Evidence.Task, offlinetask.Answerer{FromPrompt: evidenceAnswer,
		Markers: []string{"search plan", "searches", "\"strings\""}})
	offlinetask.Register(specs.Localize.Task, offlinetask.Answerer{FromPrompt: localizeAnswer,
		Markers: []string{"rank", "which files", "files to edit", "files to change", "file paths", "list of files", "most relevant files"}})
}

var (
	listPrefix = regexp.MustCompile(`^\s*(?:\d+[.)]|[-*+•])\s+`)
	pathLike   = regexp.MustCompile(`^[A-Za-z0-9_.@+~-][A-Za-z0-9_./@+~-]*$`)
	extension  = regexp.MustCompile(`\.[A-Za-z][A-Za-z0-9]{0,9}$`)
	issueTag   = regexp.MustCompile(`(?is)<issue>(.*?)</issue>`)
	atMost     = regexp.MustCompile(`(?i)at most (\d+) (?:paths|files)`)
	heading    = regexp.MustCompile(`^(?:#+\s*|\*\*)?([A-Za-z][A-Za-z ]{0,40}?)(?:\*\*)?\s*:?\s*$`)
	identRE    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// promptPath returns the path a prompt line lists ("" when the line is not a lone path).
func promptPath(line string) string {
	t := listPrefix.ReplaceAllString(strings.TrimSpace(line), "")
	t = strings.Trim(t, "`'\"*")
	if !pathLike.MatchString(t) || strings.HasSuffix(t, ".") {
		return ""
	}
	if !strings.Contains(t, "/") && !extension.MatchString(t) {
		return ""
	}
	return t
}

// issueText finds the issue in a prompt (see DefaultAnswer).
func issueText(prompt string) string {
	if m := issueTag.FindStringSubmatch(prompt); m != nil {
		return m[1]
	}
	lines := strings.Split(prompt, "\n")
	for i, l := range lines {
		m := heading.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil || !strings.EqualFold(strings.TrimSpace(m[1]), "issue") {
			continue
		}
		var b strings.Builder
		for _, next := range lines[i+1:] {
			t := strings.TrimSpace(next)
			if strings.HasPrefix(t, "#") || (heading.MatchString(t) && strings.HasSuffix(t, ":") && t != "") {
				break
			}
			b.WriteString(next + "\n")
		}
		return b.String()
	}
	var b strings.Builder
	for _, l := range lines {
		if promptPath(l) == "" {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

var stopWords = map[string]bool{"the": true, "and": true, "for": true, "with": true, "that": true, "this": true,
	"from": true, "not": true, "are": true, "was": true, "but": true, "when": true, "into": true, "file": true,
	"files": true, "test": true, "tests": true, "src": true, "lib": true, "pkg": true, "internal": true}

// words splits text into lowercase words of at least three letters, cutting identifiers at case changes
// ("CSVReader" is csv, reader), digits and punctuation, without stop words.
func words(text string) []string {
	var out []string
	rs := []rune(text)
	start := -1
	flush := func(end int) {
		if start >= 0 {
			w := strings.ToLower(string(rs[start:end]))
			if len(w) >= 3 && !stopWords[w] {
				out = append(out, w)
			}
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start >= 0 {
			prev := rs[i-1]
			switch {
			case unicode.IsDigit(r) != unicode.IsDigit(prev):
				flush(i)
			case unicode.IsUpper(r) && unicode.IsLower(prev):
				flush(i)
			case unicode.IsLower(r) && unicode.IsUpper(prev) && i-1 > start:
				// The end of an acronym: its last capital starts the next word.
				flush(i - 1)
				start = i - 1
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(rs))
	return out
}

func localizeAnswer(prompt string) string {
	var paths []string
	seen := map[string]bool{}
	for _, l := range strings.Split(prompt, "\n") {
		if p := promptPath(l); p != "" && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	issue := map[string]bool{}
	for _, w := range words(issueText(prompt)) {
		issue[w] = true
	}
	type scored struct {
		path  string
		score int
		order int
	}
	var ranked []scored
	for i, p := range paths {
		shared := map[string]bool{}
		for _, w := range words(p) {
			if issue[w] {
				shared[w] = true
			}
		}
		ranked = append(ranked, scored{p, len(shared), i})
	}
	sort.SliceStable(ranked, func(i, j int) bool { return ranked[i].score > ranked[j].score })
	limit := 10
	if m := atMost.FindStringSubmatch(prompt); m != nil {
		fmt.Sscan(m[1], &limit)
	}
	var keep []string
	for _, r := range ranked {
		if r.score > 0 && len(keep) < limit {
			keep = append(keep, r.path)
		}
	}
	if len(keep) == 0 {
		for _, r := range ranked[:min(3, limit, len(ranked))] {
			keep = append(keep, r.path)
		}
	}
	if len(keep) == 0 {
		return "I could not find any file paths in the prompt."
	}
	var b strings.Builder
	b.WriteString("Based on the issue, these files most likely need changes, most relevant first:\n\n")
	for i, p := range keep {
		fmt.Fprintf(&b, "%d. `%s`\n", i+1, p)
	}
	return b.String()
}

// identifiers returns the code identifiers of text in order of first appearance.
func identifiers(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, loc := range identRE.FindAllStringIndex(text, -1) {
		id := text[loc[0]:loc[1]]
		call := loc[1] < len(text) && text[loc[1]] == '('
		if len(id) < 3 || seen[id] || !(call || isCodeLike(id)) {
			continue
		}
		seen[id] = true
		out = append(out, id)
	}
	return out
}

// isCodeLike: snake_case, or mixed case after the first letter (CamelCase, camelCase).
func isCodeLike(id string) bool {
	if strings.Contains(strings.Trim(id, "_"), "_") {
		return true
	}
	upper, lower := false, false
	for i, r := range id {
		if i == 0 {
			continue
		}
		upper = upper || unicode.IsUpper(r)
		lower = lower || unicode.IsLower(r)
	}
	return upper && lower
}

func evidenceAnswer(prompt string) string {
	ids := identifiers(issueText(prompt))
	type search struct {
		Kind    string   `json:"kind"`
		Strings []string `json:"strings"`
	}
	var plan struct {
		Searches []search `json:"searches"`
	}
	plan.Searches = []search{}
	if len(ids) > 0 {
		plan.Searches = append(plan.Searches, search{Kind: "definition", Strings: ids[:min(8, len(ids))]})
		plan.Searches = append(plan.Searches, search{Kind: "callers", Strings: ids[:min(3, len(ids))]})
	} else if ws := words(issueText(prompt)); len(ws) > 0 {
		sort.SliceStable(ws, func(i, j int) bool { return len(ws[i]) > len(ws[j]) })
		plan.Searches = append(plan.Searches, search{Kind: "string", Strings: uniq(ws)[:min(3, len(uniq(ws)))]})
	}
	data, _ := json.MarshalIndent(plan, "", "  ")
	return "Here is the search plan:\n\n```json\n" + string(data) + "\n```\n"
}

func uniq(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
