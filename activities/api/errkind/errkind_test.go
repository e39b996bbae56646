package errkind

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// wantClass is every kind's class: whose failure it is. A kind added without a line here fails TestEveryKindHasAClass.
var wantClass = map[Kind]Class{
	ContextLength: Model,

	RateLimit: Endpoint, Server: Endpoint, Timeout: Endpoint, BadResponse: Endpoint, RepeatedError: Endpoint,
	ContextCapacity: Endpoint, LostWorker: Endpoint,

	Auth: Configuration, Quota: Configuration, ModelNotFound: Configuration, ContextWindow: Configuration,
	BadRequest: Configuration, BadInput: Configuration, Unsupported: Configuration, StoreMismatch: Configuration,

	MissingRunner: Environment, Toolchain: Environment, PythonEnvironment: Environment, ModuleDownload: Environment,
	DockerImage:  Environment,
	DockerDaemon: Environment, DiskFull: Environment, Permission: Environment, MissingCommit: Environment,
	SymlinkRefused: Environment, RepoUnavailable: Environment, Sandbox: Environment, StepTimeout: Environment,
	Internal: Environment, StepFailed: Environment,
}

// TestEveryKindHasAClass: each kind is in exactly the class that says whose failure it is, and only the model's
// rows stay final on a plain re-run. Before the classes were four, a missing pytest, a full disk or a stopped
// Docker daemon ("step grade") was filed as the model's failure, final.
func TestEveryKindHasAClass(t *testing.T) {
	for _, k := range Kinds() {
		want, ok := wantClass[k]
		if !ok {
			t.Errorf("kind %s has no expected class in this test", k)
			continue
		}
		if got := ClassOf(string(k)); got != want {
			t.Errorf("ClassOf(%s) = %s, want %s", k, got, want)
		}
		if got := ClassOf(string(k)).RetriedOnRerun(); got != (want != Model) {
			t.Errorf("%s: retried on a re-run = %v", k, got)
		}
	}
	if len(wantClass) != len(Kinds()) {
		t.Errorf("%d kinds expected, Kinds lists %d", len(wantClass), len(Kinds()))
	}
}

// TestClassOfRowsOfOlderVersions: rows written before a step failure had a kind say "step NAME" (or "other"): those
// are the machine's failures, never the model's, so a re-run on a fixed machine retries them.
func TestClassOfRowsOfOlderVersions(t *testing.T) {
	for _, kind := range []string{"step grade", "step checkout", "other", "", "timeout_of_some_new_kind"} {
		if got := ClassOf(kind); got != Environment {
			t.Errorf("ClassOf(%q) = %s, want environment", kind, got)
		}
	}
	if c, ok := ParseClass("infrastructure"); !ok || c != Endpoint {
		t.Errorf("the old class name infrastructure parses as %q, %v; want endpoint", c, ok)
	}
	if _, ok := ParseClass("models"); ok {
		t.Error("an unknown class name parsed")
	}
}

// TestKnown: every kind an activity may raise is known; lost_worker is the workflow's alone.
func TestKnown(t *testing.T) {
	for _, k := range Kinds() {
		if Known(string(k)) != (k != LostWorker) {
			t.Errorf("Known(%s) = %v", k, Known(string(k)))
		}
	}
	for _, s := range []string{"", "RateLimit", "BadInput", "step grade"} {
		if Known(s) {
			t.Errorf("%q is known", s)
		}
	}
}

// TestOfType: the error types of older activities map to kinds, so rows of an old worker's failures get one.
func TestOfType(t *testing.T) {
	for typ, want := range map[string]Kind{"BadInput": BadInput, "RepoError": RepoUnavailable, "Unsupported": Unsupported,
		"Panic": Internal, "UndeclaredField": Internal, "disk_full": DiskFull, "context_length": ContextLength} {
		if got, ok := OfType(typ); !ok || got != want {
			t.Errorf("OfType(%q) = %s, %v; want %s", typ, got, ok, want)
		}
	}
	for _, typ := range []string{"SpendLimit", "ProviderWait", "WorkerStopped", "lost_worker", ""} {
		if k, ok := OfType(typ); ok {
			t.Errorf("OfType(%q) = %s: that type is not a failure kind", typ, k)
		}
	}
}

// TestRetryableAndWaited: a failure a later attempt can fix is retried at once; only the endpoint's transient
// failures make a node wait for it, so the sweep never waits on a deterministic error, a key or the machine.
func TestRetryableAndWaited(t *testing.T) {
	retryable := []Kind{RateLimit, Server, Timeout, BadResponse, ContextCapacity, DiskFull, StepFailed}
	waited := []Kind{RateLimit, Server, Timeout, BadResponse, LostWorker}
	for _, k := range Kinds() {
		if k.Retryable() != slices.Contains(retryable, k) {
			t.Errorf("%s retryable = %v", k, k.Retryable())
		}
		if k.Waited() != slices.Contains(waited, k) {
			t.Errorf("%s waited = %v", k, k.Waited())
		}
		if k.Waited() && ClassOf(string(k)) != Endpoint {
			t.Errorf("%s is waited on but is not the endpoint's", k)
		}
	}
}

// TestMark: the innermost mark is the most specific and wins; the text is the error's own.
func TestMark(t *testing.T) {
	base := errors.New("write /runs/x/results.jsonl: no space left on device")
	err := fmt.Errorf("grade: %w", Mark(StepFailed, fmt.Errorf("instance a: %w", Mark(DiskFull, base))))
	if k, ok := KindOf(err); !ok || k != DiskFull {
		t.Errorf("KindOf = %s, %v; want disk_full", k, ok)
	}
	if err.Error() != "grade: instance a: "+base.Error() {
		t.Errorf("text %q", err)
	}
	if !errors.Is(err, base) {
		t.Error("the mark hides the wrapped error")
	}
	if k, ok := KindOf(base); ok {
		t.Errorf("an unmarked error has kind %s", k)
	}
	if Mark(DiskFull, nil) != nil {
		t.Error("Mark(nil) is not nil")
	}
}

// TestMatches: --retry takes a kind or a class.
func TestMatches(t *testing.T) {
	for _, c := range []struct {
		kind, sel string
		want      bool
	}{
		{"context_length", "context_length", true}, {"context_length", "model", true},
		{"missing_runner", "environment", true}, {"missing_runner", "model", false},
		{"rate_limit", "infrastructure", true}, {"step grade", "environment", true},
		{"auth", "quota", false}, {"auth", "CONFIGURATION", true},
	} {
		if got := Matches(c.kind, c.sel); got != c.want {
			t.Errorf("Matches(%q, %q) = %v", c.kind, c.sel, got)
		}
	}
}
