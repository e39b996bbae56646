package compress

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
)

// FakeCompress is the stand-in compressor: it keeps round(rate * n) of the text's n words (runs of non-space
// characters), dropping first the words that score lowest: words of the query score highest, then longer words;
// ties drop later words first. Line breaks are kept; lines left empty are dropped. Token counts are in words.
func FakeCompress(req Request) (Response, error) {
	if err := req.Check(); err != nil {
		return Response{}, err
	}
	type word struct {
		line, idx int
		score     float64
	}
	query := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(req.Query)) {
		query[strings.Trim(w, ".,:;()[]{}\"'`")] = true
	}
	lines := strings.Split(req.Text, "\n")
	fields := make([][]string, len(lines))
	var words []word
	for li, l := range lines {
		fields[li] = strings.Fields(l)
		for wi, w := range fields[li] {
			s := float64(len(w))
			if query[strings.ToLower(strings.Trim(w, ".,:;()[]{}\"'`"))] {
				s += 1000
			}
			words = append(words, word{li, wi, s})
		}
	}
	n := len(words)
	keep := int(req.Rate*float64(n) + 0.5)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return words[order[a]].score > words[order[b]].score })
	kept := make([]map[int]bool, len(lines))
	for _, i := range order[:keep] {
		w := words[i]
		if kept[w.line] == nil {
			kept[w.line] = map[int]bool{}
		}
		kept[w.line][w.idx] = true
	}
	var b strings.Builder
	for li, l := range lines {
		if kept[li] == nil {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		var ws []string
		for wi, w := range fields[li] {
			if kept[li][wi] {
				ws = append(ws, w)
			}
		}
		b.WriteString(indent + strings.Join(ws, " ") + "\n")
	}
	return Response{Text: b.String(), OriginalTokens: n, CompressedTokens: keep}, nil
}

// FakeHandler serves the protocol with FakeCompress, for tests of clients.
func FakeHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodPost || r.URL.Path != "/compress" {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "POST /compress only"})
			return
		}
		var req Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "request: " + err.Error()})
			return
		}
		resp, err := FakeCompress(req)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(resp)
	})
}
