// Package runlog holds the run folder's append-only records: attempts.jsonl (every start and end of every node
// activity, including the attempts Temporal's history does not keep) and calls.jsonl (every model call, paid or
// served from the response cache). Workers append to them from several processes; status and audit read them.
//
// It is infrastructure below activities and results (it imports only store/cas and internal packages).
package runlog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"ctxlab/internal/jsonl"
	"ctxlab/runfolder"
	"ctxlab/store/cas"
)

// Attempt events.
const (
	EventStart = "start"
	EventDone  = "done"
	EventFail  = "fail"
	EventMemo  = "memo" // the node's output was already memoized: nothing ran
)

// Attempt is one line of attempts.jsonl.
type Attempt struct {
	Time       time.Time `json:"time"`
	Event      string    `json:"event"`
	Instance   string    `json:"instance"`
	Node       string    `json:"node"`
	Step       string    `json:"step"`
	Activity   string    `json:"activity"`
	Attempt    int32     `json:"attempt,omitempty"`
	Workflow   string    `json:"workflow,omitempty"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	Error      string    `json:"error,omitempty"`
	// ErrorType is the activity error's type (a kind such as rate_limit, BadInput, SpendLimit), when it has one.
	ErrorType string  `json:"error_type,omitempty"`
	Output    cas.Ref `json:"output,omitempty"`
	// Params and Inputs reference what the attempt read: its parameters as a JSON object in the content store, and
	// the output of each input node by input name.
	Params cas.Ref            `json:"params,omitempty"`
	Inputs map[string]cas.Ref `json:"inputs,omitempty"`
	// Usage is the attempt's model calls (done and fail events).
	Usage
	// Reused is the memo key of work an equal node already did that the attempt reused instead of redoing: a grade
	// of a byte-identical patch (activities/steps/gradememo.go). Scheduling decides which node reuses, so rows do not say.
	Reused string `json:"reused,omitempty"`
}

// Usage counts an attempt's model calls: calls made, of which PaidCalls reached the provider and CacheHits were
// answered from the response cache; tokens and dollars count paid calls only.
type Usage struct {
	ModelCalls       int     `json:"model_calls,omitempty"`
	PaidCalls        int     `json:"paid_calls,omitempty"`
	CacheHits        int     `json:"cache_hits,omitempty"`
	PromptTokens     int     `json:"prompt_tokens,omitempty"`
	CompletionTokens int     `json:"completion_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
}

// Call is one line of calls.jsonl: one model call, written when it ends.
type Call struct {
	Time     time.Time `json:"time"`
	Instance string    `json:"instance"`
	Node     string    `json:"node"`
	Step     string    `json:"step"`
	Provider string    `json:"provider"`
	Model    string    `json:"model"`
	// Key is the response cache key (a hash of provider, model, endpoint, messages, parameters and sample).
	Key string `json:"key"`
	// Cached is true when the response came from the cache: nothing was paid.
	Cached           bool `json:"cached,omitempty"`
	PromptTokens     int  `json:"prompt_tokens,omitempty"`
	CompletionTokens int  `json:"completion_tokens,omitempty"`
	// CachedTokens and CacheWriteTokens are the prompt tokens read from and written to the provider's prompt cache
	// (part of PromptTokens), each priced at its own price.
	CachedTokens     int     `json:"cached_tokens,omitempty"`
	CacheWriteTokens int     `json:"cache_write_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
	DurationMS       int64   `json:"duration_ms,omitempty"`
	// Error is the failure kind of a call that got no usable answer (it may still have been paid for).
	Error string `json:"error,omitempty"`
	// Request and Response reference the messages sent and the answer, in the run's content store.
	Request  cas.Ref `json:"request,omitempty"`
	Response cas.Ref `json:"response,omitempty"`
}

// Paid reports whether the call reached the provider.
func (c Call) Paid() bool { return !c.Cached }

// Append writes v as one JSON line to path. One write of a short line with O_APPEND keeps lines whole when several
// processes append to the same file.
func Append(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := runfolder.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Read decodes every line of a JSON-lines file into T. A missing file is empty. A line that does not decode (the
// torn last line of a killed process) is skipped and counted in bad.
func Read[T any](path string) (out []T, bad int, err error) {
	return jsonl.ReadFile[T](path)
}
