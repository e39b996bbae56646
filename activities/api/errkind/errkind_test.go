package errkind

import "testing"

// TestClassOf: rate limits, server errors, timeouts, broken answers and lost workers are the infrastructure's,
// auth and quota the configuration's; only the rest is the model's, and only that stays final on a re-run.
func TestClassOf(t *testing.T) {
	for kind, want := range map[string]Class{
		"rate_limit": Infrastructure, "server": Infrastructure, "timeout": Infrastructure,
		"bad_response": Infrastructure, "lost_worker": Infrastructure,
		"auth": Configuration, "quota": Configuration,
		"context_length": Model, "bad_request": Model, "step_timeout": Model, "step patch": Model, "": Model,
	} {
		if got := ClassOf(kind); got != want {
			t.Errorf("ClassOf(%q) = %s, want %s", kind, got, want)
		}
		if got := ClassOf(kind).RetriedOnRerun(); got != (want != Model) {
			t.Errorf("%q: retried on a re-run = %v", kind, got)
		}
	}
}

// TestKnown: the kinds a failed call can have are known; lost_worker and step_timeout are a node's, not a call's.
func TestKnown(t *testing.T) {
	for _, k := range []Kind{RateLimit, Server, Timeout, ContextLength, Auth, Quota, BadRequest, BadResponse} {
		if !Known(string(k)) {
			t.Errorf("%s is not known", k)
		}
	}
	for _, s := range []string{string(LostWorker), "step_timeout", "", "RateLimit"} {
		if Known(s) {
			t.Errorf("%q is known", s)
		}
	}
}

// TestRetryable: only failures a later attempt can fix are retried.
func TestRetryable(t *testing.T) {
	for k, want := range map[Kind]bool{RateLimit: true, Server: true, Timeout: true, BadResponse: true,
		ContextLength: false, Auth: false, Quota: false, BadRequest: false} {
		if k.Retryable() != want {
			t.Errorf("%s retryable = %v, want %v", k, !want, want)
		}
	}
}
