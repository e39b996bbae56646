package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"strings"

	"ctxlab/patch/diff"
)

// Parsers of model answers. Models wrap what was asked for in prose, fences, markdown and numbering; these read
// through that and keep only what the caller can check.

// ErrNoDiff is wrapped by the errors of ExtractDiff, ParseSearchReplace and SearchReplaceDiff when an answer holds
// no edit at all (as opposed to an edit that is malformed): the caller records an empty patch.
var ErrNoDiff = errors.New("the answer holds no edit")

// ---- ranked path lists ----

var (
	// listMarker is a numbered or bulleted list item's prefix: "1.", "1)", "(1)", "#1", "-", "*", "+", "•", "> ".
	listMarker = regexp.MustCompile(`^\s*(?:>\s*)*(?:\(?\d{1,3}[.)\]:]|#\d{1,3}[.):]?|[-*+•·▪‣◦])\s+`)
	// pathToken is a run of characters a path can hold.
	pathToken = regexp.MustCompile("[^\\s`'\"*,;()\\[\\]<>{}|•]+")
	// lineSuffix is a location after a path: ":123", ":12:5", ":10-20", "#L12", "#L10-L20".
	lineSuffix = regexp.MustCompile(`(?::\d+(?::\d+)?(?:-\d+)?|#L\d+(?:-L?\d+)?)$`)
	// explanation starts the part of a line that explains a path: " (reason)", " - reason", ": reason".
	explanation = regexp.MustCompile(`\s+\(|\s+[-–—]\s+|:\s+`)
	// extension is a file name's extension.
	extension = regexp.MustCompile(`\.[A-Za-z][A-Za-z0-9_+-]{0,15}$`)
)

// ParseRankedPaths reads a ranked list of repository paths from a model's answer. It accepts numbered ("1. a.go",
// "1) a.go"), bulleted (-, *, +, •) and bare lists, fenced code blocks, paths in backticks, quotes or markdown bold,
// "./", "a/" and "b/" prefixes, absolute paths ending in a repository path, and suffixes such as ":123", "#L5" or
// " (reason)"; several paths on one line count in their order. When the answer has list items or fenced lines,
// prose lines around them are ignored; otherwise paths are read from the prose.
//
// Paths for which known returns false are dropped; a nil known keeps every token that looks like a path (has a "/"
// or an extension). The result keeps the order of first mention, without duplicates.
func ParseRankedPaths(text string, known func(path string) bool) []string {
	accept := known
	if accept == nil {
		accept = func(p string) bool { return looksLikePath(p) }
	}
	lines := answerLines(text)
	var listed, prose []string
	for _, l := range lines {
		if l.structured {
			listed = append(listed, pathsOnLine(l.text, accept)...)
		} else {
			prose = append(prose, pathsOnLine(l.text, accept)...)
		}
	}
	found := listed
	if len(found) == 0 {
		found = prose
	}
	seen := map[string]bool{}
	out := []string{}
	for _, p := range found {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

type answerLine struct {
	text string
	// structured: inside a fence, a list item, a line holding one token (a bare list) or a diff header.
	structured bool
}

// answerLines splits an answer into lines without the fence markers, stripped of list markers.
func answerLines(text string) []answerLine {
	var out []answerLine
	inFence := false
	for _, raw := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(raw)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = !inFence
			continue
		}
		if t == "" {
			continue
		}
		l := answerLine{text: t, structured: inFence}
		if loc := listMarker.FindStringIndex(t); loc != nil {
			l.text = t[loc[1]:]
			l.structured = true
		}
		if len(strings.Fields(l.text)) == 1 || strings.HasPrefix(l.text, "[") || strings.HasPrefix(l.text, "\"") ||
			strings.HasPrefix(t, "--- ") || strings.HasPrefix(t, "+++ ") || strings.HasPrefix(t, "diff --git ") {
			l.structured = true
		}
		out = append(out, l)
	}
	return out
}

// pathsOnLine returns the accepted paths of one line in order. After the first path, an explanation (" (", " - ",
// ": ") ends the line, so that files a reason mentions do not count.
func pathsOnLine(line string, accept func(string) bool) []string {
	var out []string
	rest := line
	for rest != "" {
		loc := pathToken.FindStringIndex(rest)
		if loc == nil {
			break
		}
		tok := rest[loc[0]:loc[1]]
		rest = rest[loc[1]:]
		if p, ok := resolvePath(tok, accept); ok {
			out = append(out, p)
			if strings.HasSuffix(tok, ":") {
				break
			}
			if e := explanation.FindStringIndex(rest); e != nil && strings.Trim(rest[:e[0]], " \t`'\"*_~") == "" {
				break
			}
		}
	}
	return out
}

// resolvePath cleans a token into a repository path and checks it with accept, trying the spellings a model uses
// for the same path.
func resolvePath(tok string, accept func(string) bool) (string, bool) {
	p := strings.Trim(tok, "_~")
	p = strings.TrimRight(p, ".,:;!?")
	p = lineSuffix.ReplaceAllString(p, "")
	p = strings.TrimRight(p, ".,:;!?")
	if p == "" || strings.Contains(p, "://") || strings.HasSuffix(p, "/") {
		return "", false
	}
	p = strings.ReplaceAll(p, "\\", "/")
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	if p == "" {
		return "", false
	}
	var tries []string
	tries = append(tries, p)
	if strings.HasPrefix(p, "a/") || strings.HasPrefix(p, "b/") {
		tries = append(tries, p[2:])
	}
	if strings.HasPrefix(p, "/") {
		// An absolute path (a checkout such as /testbed/pkg/x.py): its repository path is one of its suffixes.
		parts := strings.Split(strings.TrimLeft(p, "/"), "/")
		for i := range parts {
			tries = append(tries, strings.Join(parts[i:], "/"))
		}
	}
	for _, t := range tries {
		if t != "" && !strings.HasPrefix(t, "/") && accept(t) {
			return t, true
		}
	}
	return "", false
}

// looksLikePath is the check used without a known-path function: a "/" or an extension, and not a number.
func looksLikePath(p string) bool {
	if strings.HasPrefix(p, "-") || strings.HasPrefix(p, "..") {
		return false
	}
	return strings.Contains(strings.Trim(p, "/"), "/") || extension.MatchString(p)
}

// ---- search plans ----

// Kinds of search an evidence plan can ask for.
const (
	SearchDefinition = "definition" // where a symbol is defined
	SearchCallers    = "callers"    // where a symbol is used
	SearchString     = "string"     // a fixed string anywhere
	SearchImport     = "import"     // files importing a package or module
	SearchTest       = "test"       // tests mentioning a string
)

// Search is one typed search of an evidence plan.
type Search struct {
	Kind    string   `json:"kind"`
	Strings []string `json:"strings"`
}

// SearchPlan is the searches a model asks for, in its order.
type SearchPlan struct {
	Searches []Search `json:"searches"`
}

// kindAliases maps the names models use for a kind to the kind.
var kindAliases = func() map[string]string {
	groups := map[string][]string{
		SearchDefinition: {"definition", "definitions", "def", "define", "defined", "symbol", "symbols", "function",
			"class", "type", "method", "declaration"},
		SearchCallers: {"callers", "caller", "calls", "call", "usage", "usages", "uses", "references", "reference",
			"refs", "callsites", "call_sites"},
		SearchString: {"string", "strings", "text", "grep", "literal", "fixed", "fixed_string", "search", "keyword",
			"message", "error", "regex"},
		SearchImport: {"import", "imports", "importers", "module", "package"},
		SearchTest:   {"test", "tests", "testcase", "test_case"},
	}
	m := map[string]string{}
	for kind, names := range groups {
		for _, n := range names {
			m[n] = kind
		}
	}
	return m
}()

// NormalizeSearchKind maps a kind as a model spells it to one of the Search* kinds. Unknown kinds become
// SearchString: a fixed-string search over the repository is the search every other kind narrows, so the model's
// strings still find evidence.
func NormalizeSearchKind(kind string) string {
	k := strings.ToLower(strings.TrimSpace(kind))
	k = strings.NewReplacer("-", "_", " ", "_").Replace(k)
	if v, ok := kindAliases[k]; ok {
		return v
	}
	if v, ok := kindAliases[strings.TrimSuffix(k, "_search")]; ok {
		return v
	}
	return SearchString
}

// ParseSearchPlan reads an evidence plan from a model's answer: JSON, possibly fenced or surrounded by prose, as
// {"searches": [{"kind": ..., "strings": [...]}, ...]}, a bare array of searches, or one search object. Common
// variants are read too: "type"/"search" for kind, "queries"/"terms"/"query"/"symbols" for strings, a single string
// for the list, trailing commas. Kinds are normalized with NormalizeSearchKind (unknown kinds become "string").
// Empty and repeated strings are dropped, then each search is cut to maxStrings strings and the plan to maxSearches
// searches with strings (a limit <= 0 is no limit). It fails only when no search with a string is found.
func ParseSearchPlan(text string, maxSearches, maxStrings int) (SearchPlan, error) {
	tried := 0
	for cand := range jsonCandidates(text) {
		// A plan has an object with a quoted key: other values (numbers in brackets, "[x]" in prose) are skipped
		// without decoding, and the objects decoded are bounded.
		if !bytes.ContainsRune(cand, '{') || !bytes.ContainsRune(cand, '"') {
			continue
		}
		if tried++; tried > maxPlanCandidates {
			return SearchPlan{}, fmt.Errorf("no search plan in the first %d JSON objects of the answer (%d bytes)",
				maxPlanCandidates, len(text))
		}
		plan, ok := decodePlan(cand)
		if !ok {
			continue
		}
		plan = trimPlan(plan, maxSearches, maxStrings)
		if len(plan.Searches) > 0 {
			return plan, nil
		}
	}
	return SearchPlan{}, fmt.Errorf("no search plan in the answer (want JSON such as {\"searches\": [{\"kind\": \"definition\", \"strings\": [\"Name\"]}]}): %q", clip(strings.TrimSpace(text), 200))
}

// maxPlanCandidates bounds the JSON objects ParseSearchPlan decodes as plans; an answer holding more before its
// plan is not one a model writes.
const maxPlanCandidates = 1000

// jsonCandidates yields the JSON values an answer may hold, most likely first: fenced blocks, the whole answer,
// then the values starting at a "{" or "[", in order. It is linear in the answer's length: a value that fails to
// decode stops where the decoder stopped, since every "{" or "[" it holds that is still open there fails at the
// same byte; the values it completed before that byte are yielded, and the search goes on from there.
func jsonCandidates(text string) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for _, f := range fencedBlocks(text) {
			if !yield([]byte(f.body)) {
				return
			}
		}
		if !yield([]byte(text)) {
			return
		}
		s := repairJSON(text)
		for i := 0; i < len(s); {
			j := strings.IndexAny(s[i:], "{[")
			if j < 0 {
				return
			}
			i += j
			if k, ok := cannotStartValue(s, i); ok { // the decoder would refuse byte k: no need to run it
				i = k
				continue
			}
			dec := json.NewDecoder(strings.NewReader(s[i:]))
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if err == nil {
				if !yield(raw) {
					return
				}
				i += int(dec.InputOffset())
				continue
			}
			stop := len(s) // the answer ended inside the value
			var syntax *json.SyntaxError
			if errors.As(err, &syntax) {
				stop = i + int(syntax.Offset) - 1 // the byte the decoder refused
			}
			for _, v := range completedInside(s[i:stop]) {
				if !yield([]byte(v)) {
					return
				}
			}
			i = max(stop, i+1)
		}
	}
}

// cannotStartValue reports whether the "{" or "[" at s[i] is followed (after white space) by a byte that no JSON
// value can have there, and that byte's index: prose in brackets ("[see below]", "{x}") is skipped this way without
// a decoder.
func cannotStartValue(s string, i int) (int, bool) {
	k := i + 1
	for k < len(s) && strings.IndexByte(" \t\r\n", s[k]) >= 0 {
		k++
	}
	if k == len(s) {
		return k, true
	}
	allowed := `"}` // an object's key or its end
	if s[i] == '[' {
		allowed = `"-0123456789tfn[{]` // a value or the array's end
	}
	return k, strings.IndexByte(allowed, s[k]) < 0
}

// completedInside returns the arrays and objects that prefix, the valid beginning of a JSON value, completes
// before it ends: the outermost ones, in order.
func completedInside(prefix string) []string {
	type span struct{ start, end, depth int }
	var opens []int // the starts of the values open at k
	var done []span // the values completed so far that no completed value holds
	inString, escaped := false, false
	for k := 0; k < len(prefix); k++ {
		c := prefix[k]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			opens = append(opens, k)
		case '}', ']':
			if len(opens) < 2 { // the outermost value never closes inside prefix
				return nil
			}
			depth := len(opens) - 1
			for len(done) > 0 && done[len(done)-1].depth > depth { // held by the value closing here
				done = done[:len(done)-1]
			}
			done = append(done, span{opens[depth], k + 1, depth})
			opens = opens[:depth]
		}
	}
	out := make([]string, len(done))
	for i, d := range done {
		out[i] = prefix[d.start:d.end]
	}
	return out
}

var trailingComma = regexp.MustCompile(`,(\s*[}\]])`)

// repairJSON removes trailing commas, the mistake models make most in JSON.
func repairJSON(s string) string { return trailingComma.ReplaceAllString(s, "$1") }

// rawSearch is a search as models write it.
type rawSearch struct {
	Kind    string          `json:"kind"`
	Type    string          `json:"type"`
	Search  string          `json:"search"`
	Tool    string          `json:"tool"`
	Strings json.RawMessage `json:"strings"`
	Queries json.RawMessage `json:"queries"`
	Terms   json.RawMessage `json:"terms"`
	Query   json.RawMessage `json:"query"`
	String  json.RawMessage `json:"string"`
	Symbols json.RawMessage `json:"symbols"`
	Names   json.RawMessage `json:"names"`
	Pattern json.RawMessage `json:"patterns"`
}

func (r rawSearch) toSearch() Search {
	kind := firstNonEmpty(r.Kind, firstNonEmpty(r.Type, firstNonEmpty(r.Search, r.Tool)))
	var strs []string
	for _, raw := range []json.RawMessage{r.Strings, r.Queries, r.Terms, r.Query, r.String, r.Symbols, r.Names, r.Pattern} {
		strs = append(strs, stringList(raw)...)
	}
	return Search{Kind: NormalizeSearchKind(kind), Strings: strs}
}

// stringList reads a JSON string or array of strings (numbers are kept as their text).
func stringList(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []json.RawMessage
	if json.Unmarshal(raw, &many) != nil {
		return nil
	}
	var out []string
	for _, m := range many {
		if s := rawString(m); s != "" && !strings.HasPrefix(s, "{") && !strings.HasPrefix(s, "[") {
			out = append(out, s)
		}
	}
	return out
}

func decodePlan(data []byte) (SearchPlan, bool) {
	data = bytes.TrimSpace([]byte(repairJSON(string(data))))
	if len(data) == 0 {
		return SearchPlan{}, false
	}
	var list []rawSearch
	if data[0] == '[' {
		if json.Unmarshal(data, &list) != nil {
			return SearchPlan{}, false
		}
	} else {
		var obj struct {
			Searches json.RawMessage `json:"searches"`
			Plan     json.RawMessage `json:"plan"`
			Queries  json.RawMessage `json:"queries"`
		}
		if json.Unmarshal(data, &obj) != nil {
			return SearchPlan{}, false
		}
		inner := obj.Searches
		if len(inner) == 0 {
			inner = obj.Plan
		}
		if len(inner) == 0 && len(obj.Queries) > 0 && obj.Queries[0] == '[' && bytes.Contains(obj.Queries, []byte("{")) {
			inner = obj.Queries
		}
		if len(inner) > 0 {
			if json.Unmarshal(inner, &list) != nil {
				return SearchPlan{}, false
			}
		} else {
			var one rawSearch
			if json.Unmarshal(data, &one) != nil {
				return SearchPlan{}, false
			}
			list = []rawSearch{one}
		}
	}
	var plan SearchPlan
	for _, r := range list {
		plan.Searches = append(plan.Searches, r.toSearch())
	}
	return plan, true
}

func trimPlan(plan SearchPlan, maxSearches, maxStrings int) SearchPlan {
	out := SearchPlan{Searches: []Search{}}
	for _, s := range plan.Searches {
		seen := map[string]bool{}
		var strs []string
		for _, str := range s.Strings {
			str = strings.TrimSpace(str)
			if str == "" || seen[str] {
				continue
			}
			seen[str] = true
			strs = append(strs, str)
			if maxStrings > 0 && len(strs) == maxStrings {
				break
			}
		}
		if len(strs) == 0 {
			continue
		}
		out.Searches = append(out.Searches, Search{Kind: s.Kind, Strings: strs})
		if maxSearches > 0 && len(out.Searches) == maxSearches {
			break
		}
	}
	return out
}

// ---- diffs ----

type fenced struct {
	info string // the word after the opening fence, lowercased ("diff", "python", "")
	body string // the lines between the fences, each ending in "\n"
}

// fencedBlocks returns the ``` (or ~~~) blocks of an answer; an unclosed last block runs to the end.
func fencedBlocks(text string) []fenced {
	var out []fenced
	var cur *fenced
	var body strings.Builder
	var marker string
	for _, line := range strings.SplitAfter(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if cur == nil {
			if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
				marker = t[:3]
				info := strings.TrimSpace(strings.TrimLeft(t, marker[:1]))
				if f := strings.Fields(info); len(f) > 0 {
					info = f[0]
				}
				cur = &fenced{info: strings.ToLower(info)}
				body.Reset()
			}
			continue
		}
		if strings.HasPrefix(t, marker) && strings.Trim(t, marker[:1]) == "" {
			cur.body = body.String()
			out = append(out, *cur)
			cur = nil
			continue
		}
		body.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			body.WriteString("\n")
		}
	}
	if cur != nil {
		cur.body = body.String()
		out = append(out, *cur)
	}
	return out
}

// ExtractedDiff is the unified diff read from a model's answer.
type ExtractedDiff struct {
	// Patch is the diff, ending in a newline.
	Patch string
	// Recounted is the number of hunks whose header counts disagreed with their body by blank lines at the hunk's
	// end only and were repaired (diff.RecountBlankTails); 0 when the answer's diff was taken as written.
	Recounted int
}

// ExtractDiff returns the unified diff in a model's answer; see ExtractDiffDetail. A caller that stores the result
// should use ExtractDiffDetail, so that a repaired hunk header is recorded.
func ExtractDiff(text string) (string, error) {
	d, err := ExtractDiffDetail(text)
	return d.Patch, err
}

// ExtractDiffDetail returns the unified diff in a model's answer: the fenced blocks (```, ~~~, with any info word)
// that hold a diff, joined in order (for answers that fence each file apart), or else the diffs in the bare text.
// A diff runs from its first "diff --git" (or "--- " and "+++ ") line through its hunks, each read by the line counts
// of its header, so blank and whitespace-only context lines, lines that look like fences or headers, and hunks at a
// file's end are kept exactly, and blank lines the answer puts after the diff are not taken in. A valid diff written
// into an answer is read back byte for byte.
//
// Line ends: when every header line of the answer's diffs ends in "\r\n" (the whole answer went through a CRLF
// conversion), one "\r" is removed before each "\n" of the answer, so the diff comes back with the LF line ends it
// was written with; "\r" that belong to the diff's content (a CRLF file's lines, in an LF answer) are kept.
//
// A hunk whose header miscounts its lines by blank lines at its end only is repaired as git apply --recount would
// (diff.RecountBlankTails) and counted in Recounted; any other miscount is left as written, for the patch parser. An
// answer without a diff gives an error wrapping ErrNoDiff.
func ExtractDiffDetail(text string) (ExtractedDiff, error) {
	lines := answerDiffLines(text)
	var parts []string
	for _, b := range diffFences(lines) {
		parts = append(parts, diffsIn(lines[b[0]:b[1]], true)...)
	}
	if len(parts) == 0 {
		parts = diffsIn(lines, false)
	}
	if len(parts) == 0 {
		return ExtractedDiff{}, fmt.Errorf("no unified diff (a \"diff --git\" or \"--- \" header) in the answer: %w", ErrNoDiff)
	}
	patch, n := diff.RecountBlankTails(strings.Join(parts, ""))
	return ExtractedDiff{Patch: patch, Recounted: n}, nil
}

// answerDiffLines splits an answer into lines that keep their "\n", removing the "\r" of CRLF line ends when every
// diff header line has one (see ExtractDiffDetail).
func answerDiffLines(text string) []string {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	headers, crlf := 0, 0
	for _, l := range lines {
		if strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") ||
			strings.HasPrefix(l, "@@ -") {
			headers++
			if strings.HasSuffix(l, "\r\n") {
				crlf++
			}
		}
	}
	if headers == 0 || crlf < headers {
		return lines
	}
	for i, l := range lines {
		if strings.HasSuffix(l, "\r\n") {
			lines[i] = l[:len(l)-2] + "\n"
		}
	}
	return lines
}

// hunkLines follows a hunk through the lines its header announces.
type hunkLines struct{ old, new int }

// take reports whether line is a hunk header or a line of the open hunk, counting it; any other line closes it.
func (h *hunkLines) take(line string) bool {
	if h.old > 0 || h.new > 0 {
		if o, n, ok := diff.HunkLineCounts(line); ok {
			h.old, h.new = h.old-o, h.new-n
			return true
		}
		h.old, h.new = 0, 0
	}
	if o, n, ok := diff.HunkCounts(line); ok {
		h.old, h.new = o, n
		return true
	}
	return false
}

// diffFences returns the [start, end) line ranges of the bodies of the answer's fenced blocks. Inside a block, the
// lines a hunk header announces are the hunk's even when they look like a closing fence (" ```" is a context line of
// a markdown file). An unclosed block runs to the end.
func diffFences(lines []string) [][2]int {
	var out [][2]int
	var hunk hunkLines // a hunk of a bare diff, which no fence opens inside
	for i := 0; i < len(lines); i++ {
		if hunk.take(lines[i]) {
			continue
		}
		t := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(t, "```") && !strings.HasPrefix(t, "~~~") {
			continue
		}
		fence := t[:len(t)-len(strings.TrimLeft(t, t[:1]))] // the run of ` or ~ that opens the block
		start := i + 1
		end := len(lines)
		for j := start; j < len(lines); j++ {
			if hunk.take(lines[j]) {
				continue
			}
			if c := strings.TrimSpace(lines[j]); strings.HasPrefix(c, fence) && strings.Trim(c, fence[:1]) == "" {
				end = j
				break
			}
		}
		out = append(out, [2]int{start, end})
		i = end
		hunk = hunkLines{}
	}
	return out
}

// diffsIn returns the diffs in lines, in order, each ending in a newline. In a fenced block (fenced) every line
// belongs to the answer's code, so lines after a complete hunk that a hunk can hold are kept for the patch parser to
// judge; in bare text a blank line after a complete hunk ends the diff, as prose follows.
func diffsIn(lines []string, fenced bool) []string {
	var out []string
	for from := 0; from < len(lines); {
		start, end := diffSpan(lines, from, fenced)
		if start < 0 {
			break
		}
		d := strings.Join(lines[start:end], "")
		if !strings.HasSuffix(d, "\n") {
			d += "\n"
		}
		d = terminateBinaryBlocks(d)
		if holdsChange(d) {
			out = append(out, d)
		}
		from = max(end, start+1)
	}
	return out
}

// holdsChange reports whether a diff's text changes something: a hunk, or a header that creates, deletes, renames,
// copies or changes the mode of a file, or a binary change. A lone "--- " line in prose does not.
func holdsChange(d string) bool {
	for _, marker := range []string{"\n@@", "\nnew file mode", "\ndeleted file mode", "\nrename ", "\ncopy ",
		"\nnew mode ", "Binary files", "GIT binary patch"} {
		if strings.Contains(d, marker) {
			return true
		}
	}
	return false
}

// diffSpan finds the first diff in lines[from:] and returns its line range, or start -1.
func diffSpan(lines []string, from int, fenced bool) (start, end int) {
	start = -1
	for i := from; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "diff --git ") || plainFileStart(lines, i) {
			start = i
			break
		}
	}
	if start < 0 {
		return -1, -1
	}
	end = start
	remOld, remNew := 0, 0
	loose := false // under a hunk header without counts ("@@ ... @@"): take the lines a hunk can hold
	for pos := start; pos < len(lines); {
		l := lines[pos]
		if remOld > 0 || remNew > 0 {
			if o, n, ok := diff.HunkLineCounts(l); ok {
				remOld, remNew = remOld-o, remNew-n
				pos++
				end = pos
				continue
			}
			remOld, remNew = 0, 0 // a short hunk; diff.RecountBlankTails or the patch parser judges it
		}
		if o, n, ok := diff.HunkCounts(l); ok {
			remOld, remNew, loose = o, n, false
			pos++
			end = pos
			continue
		}
		if strings.HasPrefix(l, "@@") {
			loose = true
			pos++
			end = pos
			continue
		}
		if strings.HasPrefix(l, "GIT binary patch") {
			loose = false
			pos = binaryBlocksEnd(lines, pos+1)
			end = pos
			continue
		}
		if isFileHeaderLine(l) {
			loose = false
			pos++
			end = pos
			continue
		}
		// Past a complete hunk: a run of lines a hunk can hold, up to the next header.
		k := pos
		blank := true
		lastText := pos
		for k < len(lines) && !startsHeader(lines, k) {
			_, _, ok := diff.HunkLineCounts(lines[k])
			isBlank := strings.TrimSpace(lines[k]) == ""
			if !ok && !isBlank {
				break
			}
			if !isBlank {
				blank = false
				lastText = k + 1
			}
			k++
		}
		switch {
		case k == pos:
			return start, end // prose or a closing fence
		case blank && k < len(lines) && startsHeader(lines, k):
			pos, end = k, k // blank lines between hunks or files: kept, diff.RecountBlankTails judges them
		case blank:
			return start, end // the answer's spacing after the diff
		case !fenced && !loose && strings.TrimSpace(l) == "":
			return start, end // prose after a blank line, such as a bulleted list
		default:
			// A hunk longer than its header says (or one under a header without counts): keep it as written, so
			// that the patch is judged as the model wrote it (git apply, like the patch parser, reads a hunk by its
			// header and takes the extra lines for text between files) instead of being cut here.
			pos, end = k, lastText
			if k < len(lines) && startsHeader(lines, k) {
				end = k
			}
		}
	}
	return start, end
}

// binaryBlocksEnd returns the line after the blocks of a "GIT binary patch" starting at lines[pos]: the forward and
// the optional reverse block, each a "literal N" or "delta N" line, its base85 data lines and the blank line that
// ends it (git apply reads each block to that blank line). A line that is not the next one of a block ends them.
func binaryBlocksEnd(lines []string, pos int) int {
	for range 2 {
		if pos >= len(lines) || !binaryBlockHeader.MatchString(trimLineEnd(lines[pos])) {
			return pos
		}
		pos++
		for pos < len(lines) && isBase85Line(trimLineEnd(lines[pos])) {
			pos++
		}
		if pos < len(lines) && trimLineEnd(lines[pos]) == "" {
			pos++
		}
	}
	return pos
}

// terminateBinaryBlocks adds the blank line that ends a binary block where the answer lost it (an answer trimmed
// at its end, a fence closed right after the data): git apply refuses a block without it as corrupt.
func terminateBinaryBlocks(d string) string {
	if !strings.Contains(d, "GIT binary patch") {
		return d
	}
	lines := strings.SplitAfter(strings.TrimSuffix(d, "\n"), "\n") // d ends in "\n": no empty last element
	lines[len(lines)-1] += "\n"
	var b strings.Builder
	inBlock := false
	for _, l := range lines {
		t := trimLineEnd(l)
		switch {
		case binaryBlockHeader.MatchString(t):
			inBlock = true
		case inBlock && !isBase85Line(t):
			if t != "" {
				b.WriteString("\n")
			}
			inBlock = false
		}
		b.WriteString(l)
	}
	if inBlock {
		b.WriteString("\n")
	}
	return b.String()
}

var binaryBlockHeader = regexp.MustCompile(`^(literal|delta) [0-9]+$`)

// trimLineEnd removes a line's "\n" or "\r\n".
func trimLineEnd(l string) string { return strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r") }

// isBase85Line reports whether l is a data line of a git binary block: a length character ('A'-'Z' for 1-26 bytes,
// 'a'-'z' for 27-52) and then five characters of git's base85 alphabet for every four bytes.
func isBase85Line(l string) bool {
	if len(l) < 6 {
		return false
	}
	var n int
	switch c := l[0]; {
	case c >= 'A' && c <= 'Z':
		n = int(c-'A') + 1
	case c >= 'a' && c <= 'z':
		n = int(c-'a') + 27
	default:
		return false
	}
	if len(l)-1 != (n+3)/4*5 {
		return false
	}
	for i := 1; i < len(l); i++ {
		if !strings.ContainsRune(base85Alphabet, rune(l[i])) {
			return false
		}
	}
	return true
}

// base85Alphabet is git's (base85.c).
const base85Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// plainFileStart reports whether lines[i] starts a file header without "diff --git": "--- " then "+++ ".
func plainFileStart(lines []string, i int) bool {
	return strings.HasPrefix(lines[i], "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ")
}

// startsHeader reports whether lines[i] starts a hunk or a file.
func startsHeader(lines []string, i int) bool {
	return strings.HasPrefix(lines[i], "@@") || strings.HasPrefix(lines[i], "diff --git ") || plainFileStart(lines, i)
}

// fileHeaderPrefixes start the lines of a git diff's file header, outside hunks.
var fileHeaderPrefixes = []string{"diff --git ", "index ", "--- ", "+++ ", "new file mode", "deleted file mode",
	"old mode", "new mode", "similarity index", "dissimilarity index", "rename from", "rename to", "copy from",
	"copy to", "Binary files", "GIT binary patch", "\\ No newline"}

func isFileHeaderLine(l string) bool {
	for _, p := range fileHeaderPrefixes {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}
