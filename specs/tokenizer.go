package specs

import "strings"

// Tokenizer names beside the encodings (Encodings).
const (
	// TokenizerModel, as the experiment's tokenizer, counts each model's rows in that model's own tokenizer.
	TokenizerModel = "model"
	// TokenizerEndpoint is a model's server's own tokenizer: its provider's counting scheme (Provider.Counting; for
	// openai, POST /tokenize at the server's root, as llama.cpp's llama-server and vLLM serve it, also named
	// "endpoint"). Steps receive it as the scheme, ":" and the model's id.
	TokenizerEndpoint = "endpoint"
)

// FallbackTokenizer is the encoding a model counts in when ctxlab knows no tokenizer of its own (an estimate, see
// DefaultModelTokenizer), and the default of a counting step's tokenizer param (the plan always writes the arm's).
const FallbackTokenizer = "o200k_base"

// FormerDefaultTokenizer was the experiment's default tokenizer before DefaultExperimentTokenizer: every model counted
// in o200k_base. A sweep started then resumes under a spec that pins it; the starter's refusal of a changed spec says
// so when pinning it reproduces the recorded spec hash. Never change it: it names what older sweeps did.
const FormerDefaultTokenizer = "o200k_base"

// Encodings are the tiktoken encodings compiled into ctxlab (activities/tokens).
var Encodings = []string{"o200k_base", "cl100k_base"}

// ModelTokenizers are the values a model's tokenizer may take (empty: DefaultModelTokenizer).
var ModelTokenizers = append(append([]string{}, Encodings...), TokenizerEndpoint)

// DefaultModelTokenizer is the tokenizer of a model that names none: the tiktoken encoding of an OpenAI model id
// (cl100k_base for gpt-4, gpt-4-turbo, gpt-3.5 and the ada/3 embeddings; o200k_base for gpt-4o, gpt-4.1, gpt-4.5,
// gpt-5, o1, o3, o4 and everything newer), and o200k_base for any other model: an estimate, which rows say
// (tokenizer o200k_base) and docs/models.md calls one. A model served by llama.cpp or vLLM should say
// tokenizer: 'endpoint'.
func DefaultModelTokenizer(m Model) string {
	id := strings.ToLower(m.ID)
	if i := strings.LastIndexByte(id, '/'); i >= 0 { // openai/gpt-4 as a router names it
		id = id[i+1:]
	}
	for _, p := range []string{"gpt-4o", "gpt-4.1", "gpt-4.5", "chatgpt-4o"} {
		if strings.HasPrefix(id, p) {
			return "o200k_base"
		}
	}
	for _, p := range []string{"gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada"} {
		if strings.HasPrefix(id, p) {
			return "cl100k_base"
		}
	}
	return FallbackTokenizer
}

// ResolveTokenizer is the tokenizer the plan gives the steps of model m's arms: the experiment's, when it pins one,
// else the model's own (TokenizerModel); TokenizerEndpoint becomes its provider's counting scheme and m's id
// ("endpoint:" + the id for openai, "anthropic:" + the id for anthropic, whose API counts), so that a node's key (and
// its memo's) names the model whose server counted.
func ResolveTokenizer(e *Experiment, m Model) string {
	t := e.Tokenizer
	if t == "" || t == TokenizerModel {
		t = m.Tokenizer
		if t == "" {
			t = DefaultModelTokenizer(m)
		}
	}
	if t != TokenizerEndpoint {
		return t
	}
	if p, ok := ProviderOf(m); ok && p.Counting.Scheme != "" {
		return p.Counting.Scheme + ":" + m.ID
	}
	return TokenizerEndpoint + ":" + m.ID // a provider that cannot count: Validate says so
}
