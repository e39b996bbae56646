package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"strings"
)

// Evidence plans: the typed searches a model asks for, read from JSON in its answer.

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
