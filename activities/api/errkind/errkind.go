// Package errkind is the vocabulary of failure kinds that model calls, rows and the workflows share: what went wrong
// (Kind) and whose failure that is (Class). It imports nothing, so the workflows can act on a failure's kind without
// importing the model clients of activities/llm, which produces the kinds and re-exports these names.
package errkind

// Kind classifies a failed call.
type Kind string

// Kinds of failure. Retryable ones are worth another attempt after a backoff.
const (
	RateLimit     Kind = "rate_limit"     // 429
	Server        Kind = "server"         // 5xx
	Timeout       Kind = "timeout"        // no answer in time, or the connection broke
	ContextLength Kind = "context_length" // the prompt does not fit the model: retrying cannot help
	Auth          Kind = "auth"           // 401/403: a missing or wrong key
	Quota         Kind = "quota"          // 429 insufficient_quota: the account is out of credit
	BadRequest    Kind = "bad_request"    // another 4xx
	BadResponse   Kind = "bad_response"   // the endpoint answered with something that is not a completion
)

// LostWorker is not a call's kind: a node whose every attempt lost its worker (killed, or stopped mid-run) is
// recorded with it.
const LostWorker Kind = "lost_worker"

// Known reports whether s names one of the kinds of a failed call (LostWorker is not one).
func Known(s string) bool {
	switch Kind(s) {
	case RateLimit, Server, Timeout, ContextLength, Auth, Quota, BadRequest, BadResponse:
		return true
	}
	return false
}

// Retryable reports whether a call that failed this way is worth retrying.
func (k Kind) Retryable() bool {
	switch k {
	case RateLimit, Server, Timeout, BadResponse:
		return true
	}
	return false
}

// Class says whose failure a kind of error is, which decides what a re-run of a finished sweep does with its row.
type Class string

// Classes of failure.
const (
	// Infrastructure: the endpoint or the network (rate limits, server errors, timeouts, broken connections and
	// answers, lost workers). Never the model's failure: the sweep waits and retries, and a re-run retries the row.
	Infrastructure Class = "infrastructure"
	// Configuration: the key or the account (auth, quota). Not the model's failure either: a re-run, once the key or
	// the credit is fixed, retries the row; retrying before that cannot help, so a sweep does not.
	Configuration Class = "configuration"
	// Model: the model's own failure or its answer's (a prompt too long for it, a rejected request, an answer that
	// does not parse, a patch that does not apply) and any other step failure: final, a re-run keeps the row.
	Model Class = "model"
)

// ClassOf classifies an error kind as rows record it (a Kind, "timeout", "lost_worker", or anything else).
func ClassOf(kind string) Class {
	switch Kind(kind) {
	case RateLimit, Server, Timeout, BadResponse, LostWorker:
		return Infrastructure
	case Auth, Quota:
		return Configuration
	}
	return Model
}

// RetriedOnRerun reports whether a re-run of a finished sweep retries a row whose error is of this class.
func (c Class) RetriedOnRerun() bool { return c != Model }
