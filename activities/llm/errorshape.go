package llm

import (
	"ctxlab/activities/api/errkind"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// How OpenAI-compatible servers say what went wrong, as they send it (status and body; errorshape_test.go holds the
// real bodies): the kind of a failure is read from the status, the error's code and type, and its message.
// Anthropic's API sends its errors in the same shapes ({"type": "error", "error": {"type", "message"}}).

// OpenAICompatibleErrors are the error shapes of OpenAI-compatible servers and of Anthropic's API.
var OpenAICompatibleErrors = ErrorShape{Fields: errorFields, Kind: kindOf}

// errorFields reads the code, type and message of an error body in the shapes OpenAI-compatible servers use:
// {"error": {"message", "type", "code"}}, {"error": "text"}, {"message": ...}, {"detail": ...}, or plain text.
func errorFields(body []byte) (code, typ, msg string) {
	var top struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Code    json.RawMessage `json:"code"`
		Type    string          `json:"type"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return "", "", clip(strings.Join(strings.Fields(string(body)), " "), 300)
	}
	code, typ, msg = rawString(top.Code), top.Type, top.Message
	if len(top.Error) > 0 {
		var inner struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(top.Error, &inner) == nil {
			code, typ, msg = firstNonEmpty(rawString(inner.Code), code), firstNonEmpty(inner.Type, typ), firstNonEmpty(inner.Message, msg)
		} else if s := rawString(top.Error); s != "" {
			msg = s
		}
	}
	if msg == "" {
		msg = rawString(top.Detail)
	}
	return code, typ, clip(msg, 500)
}

// kindOf classifies a failed call from its HTTP status (that of the response, or for an error inside a 200 body the
// status the body names) and its error's code, type and message.
func kindOf(status int, code, typ, msg string) errkind.Kind {
	low := strings.ToLower(msg)
	switch {
	case isQuota(status, code, typ, low):
		return errkind.Quota
	case status == http.StatusUnauthorized || status == http.StatusForbidden || typ == "authentication_error" ||
		code == "invalid_api_key":
		return errkind.Auth
	case status == http.StatusTooManyRequests || typ == "rate_limit_error":
		return errkind.RateLimit
	case isSharedContextFull(status, low):
		return errkind.ContextCapacity
	case isContextLength(code, msg) || status == http.StatusRequestEntityTooLarge:
		if promptFitsAlone(low) {
			return errkind.ContextWindow
		}
		return errkind.ContextLength
	case isModelNotFound(status, code, typ, low):
		return errkind.ModelNotFound
	case status == http.StatusRequestTimeout:
		return errkind.Timeout
	case isInputOverBatch(status, low):
		return errkind.BadRequest
	case status >= 500:
		return errkind.Server
	case status >= 400:
		return errkind.BadRequest
	}
	return errkind.BadResponse
}

// isQuota: the account is out of credit. OpenAI says insufficient_quota (with 429, or inside a 200 body),
// OpenRouter 402 "Insufficient credits", Anthropic billing_error or "Your credit balance is too low".
func isQuota(status int, code, typ, low string) bool {
	return code == "insufficient_quota" || typ == "insufficient_quota" || typ == "billing_error" ||
		status == http.StatusPaymentRequired || strings.Contains(low, "credit balance is too low") ||
		strings.Contains(low, "insufficient credits") || strings.Contains(low, "exceeded your current quota")
}

// isSharedContextFull: llama.cpp's 500 "Context size has been exceeded.", which llama-server sends to every request
// in flight when its slots' shared KV cache (kv_unified, its default) runs out while it decodes. Each slot's own
// context never causes it: a prompt longer than a slot is a 400 (exceed_context_size_error), and an answer that
// reaches the slot's end stops there with a 200 (finish_reason "length"). So it says how many requests the server
// took at once, not how long this one is: the endpoint's capacity, never the model's failure.
func isSharedContextFull(status int, low string) bool {
	return status == http.StatusInternalServerError && strings.Contains(low, "context size has been exceeded")
}

// isInputOverBatch: llama.cpp's 500 "input (N tokens) is too large to process. increase the physical batch size",
// for an embeddings or rerank input longer than the server's physical batch (its -ub): the endpoint's setting, which
// no retry changes, so the request's fault (the researcher's to fix, by the server's flag or shorter inputs), not an
// outage to wait on.
func isInputOverBatch(status int, low string) bool {
	return status == http.StatusInternalServerError && strings.Contains(low, "too large to process") &&
		strings.Contains(low, "batch size")
}

// contextLengthPhrases are how OpenAI and the common OpenAI-compatible servers say the prompt does not fit: OpenAI
// and vLLM ("maximum context length"), llama.cpp ("exceeds the available context size", exceed_context_size_error;
// its 500 "Context size has been exceeded." is the shared context's, isSharedContextFull), SGLang ("longer than the model's context
// length"), Ollama ("exceeds the context length"), LiteLLM (ContextWindowExceededError), Anthropic ("prompt is too
// long", "exceed context limit"), Azure ("input tokens exceed the configured limit"), Gemini ("exceeds the maximum
// number of tokens allowed").
var contextLengthPhrases = []string{
	"context_length_exceeded",
	"maximum context length",
	"context length",
	"context window",
	"context size",
	"context limit",
	"exceeds the context",
	"prompt is too long",
	"input is too long",
	"too many tokens",
	"reduce the length of the messages",
	"exceed_context_size",
	"contextwindowexceeded",
	"input tokens exceed the configured limit",
	"exceeds the maximum number of tokens allowed",
}

func isContextLength(code, msg string) bool {
	if code == "context_length_exceeded" || code == "string_above_max_length" {
		return true
	}
	low := strings.ToLower(msg)
	for _, ph := range contextLengthPhrases {
		if strings.Contains(low, ph) {
			return true
		}
	}
	return false
}

// Messages that break a too-long request into its prompt and its answer budget: vLLM's "you requested N tokens (P in
// the messages, C in the completion)", Anthropic's "input length and `max_tokens` exceed context limit: P + C > N"
// and OpenRouter's.
var (
	vllmParts      = regexp.MustCompile(`maximum context length is (\d+) tokens.*?\((\d+) in the messages, (\d+) in the completion\)`)
	anthropicParts = regexp.MustCompile(`exceed context limit: (\d+) \+ (\d+) > (\d+)`)
	// OpenRouter: "maximum context length is N tokens. However, you requested about T tokens (P of text input[, Q of
	// tool input], C in the output)".
	openRouterParts = regexp.MustCompile(`maximum context length is (\d+) tokens.*?\((\d+) of text input(?:, (\d+) of tool input)?, (\d+) in the output\)`)
)

// promptFitsAlone reports whether a context-length message says the prompt fits the model's context on its own and
// only the answer budget (the spec's max_tokens) pushed the request over: the spec asks more of the model's context
// than it has (errkind.ContextWindow), not a prompt too long for the model.
func promptFitsAlone(low string) bool {
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if m := vllmParts.FindStringSubmatch(low); m != nil {
		return atoi(m[2]) < atoi(m[1]) && atoi(m[3]) > 0
	}
	if m := anthropicParts.FindStringSubmatch(low); m != nil {
		return atoi(m[1]) < atoi(m[3])
	}
	if m := openRouterParts.FindStringSubmatch(low); m != nil {
		return atoi(m[2])+atoi(m[3]) < atoi(m[1]) && atoi(m[4]) > 0
	}
	return false
}

// isModelNotFound: the endpoint does not serve the spec's model id (OpenAI's model_not_found, vLLM's 404 "The model
// `x` does not exist.", Ollama's "model \"x\" not found, try pulling it first", Anthropic's not_found_error "model:
// x", LiteLLM's "Invalid model name passed in model=x").
func isModelNotFound(status int, code, typ, low string) bool {
	if code == "model_not_found" || strings.Contains(low, "invalid model name") {
		return true
	}
	if status != http.StatusNotFound && typ != "not_found_error" && typ != "NotFoundError" {
		return false
	}
	return strings.Contains(low, "model")
}

// transientHints are what an error message says when it is an outage, whatever its status: the same text coming
// back every attempt is no sign that the request itself is at fault.
var transientHints = []string{"try again", "retry", "temporar", "overload", "unavailable", "loading", "timeout",
	"timed out", "server had an error", "internal server error", "bad gateway", "upstream", "capacity", "busy"}

// deterministic reports whether a server error of this status and message, sent for the same request every attempt
// in a row, is a deterministic failure of the server for that request rather than an outage: a 5xx other than the
// gateway and availability ones (502, 503, 504, 529), whose body is an error message (not a status text or a
// page) that says nothing of an outage.
func deterministic(status int, typ, msg string, fromBody bool) bool {
	switch status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 529:
		return false
	}
	if status < 500 || !fromBody || msg == "" || strings.HasPrefix(msg, "<") || typ == "unavailable_error" ||
		typ == "overloaded_error" {
		return false
	}
	low := strings.ToLower(msg)
	for _, h := range transientHints {
		if strings.Contains(low, h) {
			return false
		}
	}
	return true
}

// bodyError reads an error object inside a body that should have been a completion ({"error": {...}} with a 200):
// its status (the body's numeric code when it is an HTTP error status, else status), kind and message; ok is false
// when the body holds none.
func (e Endpoint) bodyError(status int, body []byte) (st int, kind errkind.Kind, msg string, ok bool) {
	var top struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &top) != nil || len(top.Error) == 0 || string(top.Error) == "null" {
		return status, "", "", false
	}
	shape := e.errorShape()
	code, typ, msg := shape.Fields(body)
	st = status
	if n, err := strconv.Atoi(code); err == nil && n >= 400 && n <= 599 {
		st = n
	}
	kind = shape.Kind(st, code, typ, msg)
	if kind == errkind.BadRequest && st < 400 {
		kind = errkind.BadResponse // an error of no known kind inside a 200: retried, as a broken answer is
	}
	return st, kind, msg, true
}
