// Package errkind is the vocabulary of failure kinds that model calls, steps, rows and the workflows share: what
// went wrong (Kind) and whose failure that is (Class). It imports nothing of ctxlab, so the workflows can act on a
// failure's kind without importing the model clients of activities/llm, which produces the call kinds; the
// activities mark the step failures they raise with Mark.
package errkind

import (
	"errors"
	"strings"
)

// Kind classifies a failure: of a model call, or of a step.
type Kind string

// Kinds of a failed model call. Retryable ones are worth another attempt after a backoff.
const (
	RateLimit     Kind = "rate_limit"     // 429
	Server        Kind = "server"         // 5xx: an outage, an overloaded or restarting server
	Timeout       Kind = "timeout"        // no answer in time, or the connection broke
	ContextLength Kind = "context_length" // the prompt (with its answer) does not fit the model: retrying cannot help
	Auth          Kind = "auth"           // 401/403: a missing or wrong key
	Quota         Kind = "quota"          // insufficient_quota, 402: the account is out of credit
	BadRequest    Kind = "bad_request"    // another 4xx: the endpoint refuses the request ctxlab built from the spec
	BadResponse   Kind = "bad_response"   // the endpoint answered with something that is not a completion
	// ModelNotFound: the endpoint does not serve the spec's model id (404 "model ... does not exist / not found").
	ModelNotFound Kind = "model_not_found"
	// ContextWindow: the model's context window is smaller than the spec asks of it (its max_tokens alone, or its
	// max_tokens with a prompt that fits on its own, exceeds the window).
	ContextWindow Kind = "context_window"
	// RepeatedError: a 5xx whose body is the same error text, for the same request, every attempt in a row: a
	// deterministic failure of the server for that request, not an outage. Final for the sweep (it is not waited
	// on); a re-run tries again.
	RepeatedError Kind = "repeated_error"
	// ContextCapacity: the server ran out of the context its requests share (llama.cpp's 500 "Context size has been
	// exceeded.": its slots share one KV cache, and the requests in flight together filled it) for a request that
	// fits its slot alone. The endpoint's capacity, not the prompt's size: asked again with fewer requests beside
	// it, the request succeeds. Retried at once, never waited on; a re-run retries the row.
	ContextCapacity Kind = "context_capacity"
)

// Kinds of a failed step that are not a model call's: the machine that grades or builds, the spec and its dataset,
// or ctxlab itself.
const (
	// LostWorker: a node whose every attempt lost its worker (killed, or stopped mid-run).
	LostWorker Kind = "lost_worker"
	// StepTimeout: a step that calls no model ran past its time (a hung engine, a machine too slow for its budget).
	// Tests that hang under a patch are a grade status (timeout), not this.
	StepTimeout Kind = "step_timeout"
	// MissingRunner: no interpreter or test runner module to run the tests with (no python3 that imports pytest, a
	// test_cmd whose program is not on PATH).
	MissingRunner Kind = "missing_runner"
	// Toolchain: the Go toolchain that builds and runs Go tests is missing.
	Toolchain Kind = "toolchain"
	// PythonEnvironment: the Python environment a row or spec states (its install_config) is not on the machine (a
	// Debian package, a Python package no wheel folder has), or the tests could not import a module that neither
	// the repository holds nor the model patch imports: the machine's failure, not the model's.
	PythonEnvironment Kind = "python_environment"
	// ModuleDownload: the module requirements could not be downloaded (no proxy, no network) and the build failed
	// for it, the model patch having changed neither go.mod nor go.sum.
	ModuleDownload Kind = "module_download"
	// DockerImage: the instance's image is not on the machine.
	DockerImage Kind = "docker_image"
	// DockerDaemon: no Docker engine answers.
	DockerDaemon Kind = "docker_daemon"
	// DiskFull: a write failed with ENOSPC or EDQUOT.
	DiskFull Kind = "disk_full"
	// Permission: the machine refused an operation (EACCES, EPERM, EROFS).
	Permission Kind = "permission"
	// MissingCommit: the instance's base_commit is not in its repository (a shallow or stale clone).
	MissingCommit Kind = "missing_commit"
	// SymlinkRefused: a symbolic link of the repository that leads outside it was refused.
	SymlinkRefused Kind = "symlink_refused"
	// RepoUnavailable: the repository cannot be opened or cloned.
	RepoUnavailable Kind = "repo_unavailable"
	// Sandbox: the namespaces or user that confine the tests cannot be set up on this machine.
	Sandbox Kind = "sandbox"
	// Internal: ctxlab's own failure (a panic, an undeclared row field, a fail-closed check): part of the harness,
	// which SWE-bench counts as the environment too.
	Internal Kind = "internal"
	// StepFailed: any other failure of a step, raised by the machine it ran on (a store that cannot be read, an I/O
	// error): the fallback kind, never the model's.
	StepFailed Kind = "step_failed"
	// BadInput: the spec, a parameter or a dataset row cannot be used (a test patch that does not apply to its
	// base_commit, an unknown option).
	BadInput Kind = "bad_input"
	// Unsupported: a provider, executor or option this build does not offer.
	Unsupported Kind = "unsupported"
	// StoreMismatch: the worker's store is not the starter's (another bucket or server, a folder of its own disk):
	// what it read or wrote would not be the run's.
	StoreMismatch Kind = "store_mismatch"
)

// kinds is every kind, in the order of their classes; Kinds lists them.
var kinds = []Kind{
	ContextLength,
	RateLimit, Server, Timeout, BadResponse, RepeatedError, ContextCapacity, LostWorker,
	Auth, Quota, ModelNotFound, ContextWindow, BadRequest, BadInput, Unsupported, StoreMismatch,
	MissingRunner, Toolchain, PythonEnvironment, ModuleDownload, DockerImage, DockerDaemon, DiskFull, Permission, MissingCommit,
	SymlinkRefused, RepoUnavailable, Sandbox, StepTimeout, Internal, StepFailed,
}

// Kinds lists every kind, grouped by class (model, endpoint, configuration, environment).
func Kinds() []Kind { return append([]Kind(nil), kinds...) }

// Known reports whether s names a kind an activity's error may carry as its type (every kind but LostWorker, which
// only the workflow gives).
func Known(s string) bool {
	for _, k := range kinds {
		if string(k) == s {
			return k != LostWorker
		}
	}
	return false
}

// Retryable reports whether an activity that failed this way is worth another attempt at once (after Temporal's
// backoff): the endpoint's transient failures, a full disk (another process may free space), and a step failure of
// no more specific kind (a store that could not be read may be read the next time).
func (k Kind) Retryable() bool {
	switch k {
	case RateLimit, Server, Timeout, BadResponse, ContextCapacity, DiskFull, StepFailed:
		return true
	}
	return false
}

// Waited reports whether a node that failed this way, its attempts used up, waits on a durable timer and runs again
// (the endpoint's transient failures): the others fail the node's rows.
func (k Kind) Waited() bool {
	switch k {
	case RateLimit, Server, Timeout, BadResponse, LostWorker:
		return true
	}
	return false
}

// Class says whose failure a kind of error is, which decides what a re-run of a finished sweep does with its row.
type Class string

// Classes of failure.
const (
	// Model: the model's own failure (a prompt too long for it). Final: a re-run keeps the row, unless told to
	// retry it (starter run --retry).
	Model Class = "model"
	// Endpoint: the endpoint or the network (rate limits, outages, timeouts, broken answers, a deterministic server
	// error) and lost workers. Never the model's failure: the sweep waits on the transient ones, and a re-run
	// retries the row.
	Endpoint Class = "endpoint"
	// Configuration: what the researcher set (the key, the account's credit, the model id, a context window smaller
	// than the spec asks, a request the endpoint refuses, the spec or its dataset). A re-run, once it is fixed,
	// retries the row; retrying before that cannot help, so a sweep does not.
	Configuration Class = "configuration"
	// Environment: the machine that grades or builds (an interpreter, runner module, toolchain, module download,
	// image or daemon missing, a full disk, a permission, a missing base_commit, a refused symlink, a step out of
	// time) and ctxlab itself. Never the model's: a re-run on the fixed machine retries the row.
	Environment Class = "environment"
)

// Classes lists the classes in the order reports show them.
func Classes() []Class { return []Class{Model, Endpoint, Configuration, Environment} }

// legacyClasses are the names older versions printed for classes that were renamed.
var legacyClasses = map[string]Class{"infrastructure": Endpoint}

// ParseClass returns the class s names (a class, or a name older versions used for one).
func ParseClass(s string) (Class, bool) {
	for _, c := range Classes() {
		if string(c) == s {
			return c, true
		}
	}
	c, ok := legacyClasses[s]
	return c, ok
}

// ClassOf classifies an error kind as rows record it: a Kind, or what rows written before a kind existed derive
// from their message ("step grade", "other": a step's failure of no known kind, which is the machine's).
func ClassOf(kind string) Class {
	switch Kind(kind) {
	case ContextLength:
		return Model
	case RateLimit, Server, Timeout, BadResponse, RepeatedError, ContextCapacity, LostWorker:
		return Endpoint
	case Auth, Quota, ModelNotFound, ContextWindow, BadRequest, BadInput, Unsupported, StoreMismatch:
		return Configuration
	}
	return Environment
}

// RetriedOnRerun reports whether a plain re-run of a finished sweep retries a row whose error is of this class.
func (c Class) RetriedOnRerun() bool { return c != Model }

// legacyTypes are the error types activities raised before their failures had kinds (package api's ErrBadInput and
// the rest), with the kind each stands for.
var legacyTypes = map[string]Kind{
	"BadInput":        BadInput,
	"RepoError":       RepoUnavailable,
	"Unsupported":     Unsupported,
	"Panic":           Internal,
	"UndeclaredField": Internal,
}

// OfType returns the kind an activity error's type names: a kind, or one of the older error types; false for
// other types.
func OfType(typ string) (Kind, bool) {
	if Known(typ) {
		return Kind(typ), true
	}
	k, ok := legacyTypes[typ]
	return k, ok
}

// Error is a failure whose kind is known where it happens; its text is the wrapped error's.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Mark gives err a kind (nil stays nil). The innermost mark in a chain is the most specific, and wins (KindOf).
func Mark(k Kind, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: k, Err: err}
}

// KindOf returns the kind of the innermost mark in err's chain.
func KindOf(err error) (Kind, bool) {
	var found Kind
	for e := err; e != nil; {
		var m *Error
		if !errors.As(e, &m) {
			break
		}
		found, e = m.Kind, m.Err
	}
	return found, found != ""
}

// Matches reports whether a row's kind is selected by sel, a kind or a class name (starter run --retry).
func Matches(kind, sel string) bool {
	if strings.EqualFold(kind, sel) {
		return true
	}
	c, ok := ParseClass(strings.ToLower(sel))
	return ok && ClassOf(kind) == c
}
