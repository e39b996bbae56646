package fakeopenai

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
)

// Embed returns the vector the server gives text: each word (as words splits it, plus the lowercased raw tokens)
// is hashed to a dimension and a sign (feature hashing), and the sum is scaled to unit length. Texts that share
// words get close vectors, so retrieval over these vectors behaves like a lexical retriever; text without words
// gets a fixed unit vector derived from a hash of the whole text.
func Embed(text string, dims int) []float64 {
	if dims < 1 {
		dims = 64
	}
	v := make([]float64, dims)
	toks := words(text)
	for _, f := range strings.Fields(strings.ToLower(text)) {
		toks = append(toks, "raw:"+f)
	}
	for _, w := range toks {
		h := fnv.New64a()
		h.Write([]byte(w))
		x := h.Sum64()
		sign := 1.0
		if x>>63 == 1 {
			sign = -1
		}
		v[int(x%uint64(dims))] += sign
	}
	norm := 0.0
	for _, x := range v {
		norm += x * x
	}
	if norm == 0 {
		h := fnv.New64a()
		h.Write([]byte(text))
		v[int(h.Sum64()%uint64(dims))] = 1
		return v
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] /= norm
	}
	return v
}

func (s *Server) embed(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use POST")
		return
	}
	s.mu.Lock()
	s.embeddings++
	s.mu.Unlock()
	if !s.authorize(w, r) {
		return
	}
	var req struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		Dimensions     int             `json:"dimensions"`
		EncodingFormat string          `json:"encoding_format"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "the body is not JSON: "+err.Error())
		return
	}
	inputs, err := embeddingInputs(req.Input)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_input", err.Error())
		return
	}
	dims := s.dims
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	data := make([]any, len(inputs))
	tokens := 0
	for i, in := range inputs {
		vec := Embed(in, dims)
		tokens += approxTokens(in)
		var emb any = vec
		if req.EncodingFormat == "base64" {
			buf := make([]byte, 4*len(vec))
			for j, x := range vec {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(float32(x)))
			}
			emb = base64.StdEncoding.EncodeToString(buf)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data":   data,
		"model":  req.Model,
		"usage":  map[string]any{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}

// embeddingInputs reads input as a string, a list of strings, or token arrays (whose numbers are joined as text).
func embeddingInputs(raw json.RawMessage) ([]string, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		return many, nil
	}
	var toks []int
	if json.Unmarshal(raw, &toks) == nil && len(toks) > 0 {
		return []string{fmt.Sprint(toks)}, nil
	}
	var tokLists [][]int
	if json.Unmarshal(raw, &tokLists) == nil && len(tokLists) > 0 {
		out := make([]string, len(tokLists))
		for i, t := range tokLists {
			out[i] = fmt.Sprint(t)
		}
		return out, nil
	}
	return nil, fmt.Errorf("input must be a string, a list of strings or token arrays")
}
