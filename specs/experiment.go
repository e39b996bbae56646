package specs

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Experiment is a compiled spec. Field names follow the Jsonnet a researcher writes.
type Experiment struct {
	Name string `json:"name"`
	// File is the spec file it was compiled from, for error messages.
	File    string  `json:"file,omitempty"`
	Dataset Dataset `json:"dataset"`
	Models  []Model `json:"models"`
	// Tokenizer counts every budget, fit and context_tokens: TokenizerModel (the default) counts each model's
	// rows in that model's own tokenizer (Model.Tokenizer); an encoding or TokenizerEndpoint pins one tokenizer for
	// every model (the paper's single-tokenizer caveat: "equal budgets" are then equal in that tokenizer only). See
	// ResolveTokenizer and docs/models.md.
	Tokenizer string   `json:"tokenizer"`
	Methods   []Method `json:"methods"`
	Grading   Grading  `json:"grading"`
	Limits    Limits   `json:"limits"`
	// Anchor names the method whose context size sets each issue's token budget (empty: none).
	Anchor string `json:"anchor,omitempty"`
	// Samples is how many patch samples each method draws per context when the method sets none (0: one).
	Samples int   `json:"samples,omitempty"`
	Debug   Debug `json:"debug,omitempty"`
}

// Dataset says where the issues and their repositories come from.
type Dataset struct {
	// File is a SWE-bench-format JSONL file, relative to the spec's folder unless absolute. When Generate is set it is
	// relative to the generated dataset folder instead.
	File string `json:"file"`
	// Generate names a benchmark ctxlab builds itself into the run folder ("demo"); empty for files on disk.
	Generate string `json:"generate,omitempty"`
	// Repos is a template for each instance's repository: a local folder or a git URL. Placeholders: {repo}
	// (owner/name), {owner}, {name}, {dataset_dir} (the folder of File).
	Repos string `json:"repos"`
	// Instances, when set, keeps only these instance ids, in this order.
	Instances []string `json:"instances,omitempty"`
	// Limit, when positive, keeps the first Limit instances.
	Limit int `json:"limit,omitempty"`
}

// Model is one model every method runs under.
type Model struct {
	// Name labels rows ("offline", "gpt-5.6").
	Name string `json:"name"`
	// Provider names a declared provider (Providers: provider_NAME.go).
	Provider string `json:"provider"`
	// Replays, for a replay model, is the provider whose recorded answers it serves (the model's id, sampling and
	// endpoint being that provider's, as the recorded run called it).
	Replays string `json:"replays,omitempty"`
	// ID is the provider's model identifier (empty for offline).
	ID          string   `json:"id,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	Price       Price    `json:"price,omitempty"`
	// Tokenizer is the model's own tokenizer, used when the experiment's tokenizer is TokenizerModel: an encoding
	// (o200k_base, cl100k_base) or TokenizerEndpoint (its server's POST /tokenize: llama.cpp, vLLM). Empty: the
	// tiktoken encoding of an OpenAI model id, else o200k_base (DefaultModelTokenizer).
	Tokenizer string `json:"tokenizer,omitempty"`
}

// Price is dollars per million tokens.
type Price struct {
	Input  float64 `json:"input,omitempty"`
	Output float64 `json:"output,omitempty"`
	// CachedInput prices input tokens the provider read from its prompt cache (OpenAI's
	// prompt_tokens_details.cached_tokens, Anthropic's cache_read_input_tokens); 0: priced as Input.
	CachedInput float64 `json:"cached_input,omitempty"`
	// CacheWrite prices input tokens written to the provider's prompt cache (Anthropic's
	// cache_creation_input_tokens, a quarter dearer than input for a 5-minute cache); 0: priced as Input.
	CacheWrite float64 `json:"cache_write,omitempty"`
}

// CachedInputPrice is the price of a cached input token: CachedInput, or Input when the table sets none.
func (p Price) CachedInputPrice() float64 {
	if p.CachedInput > 0 {
		return p.CachedInput
	}
	return p.Input
}

// CacheWritePrice is the price of an input token written to the cache: CacheWrite, or Input when the table sets
// none.
func (p Price) CacheWritePrice() float64 {
	if p.CacheWrite > 0 {
		return p.CacheWrite
	}
	return p.Input
}

// MaxInput is the dearest price an input token can have: what a reservation under the spend cap assumes.
func (p Price) MaxInput() float64 { return max(p.Input, p.CachedInputPrice(), p.CacheWritePrice()) }

// Method is one way of filling the context, as a DAG of steps.
type Method struct {
	Name  string `json:"name"`
	Steps []Step `json:"steps"`
	// Samples is how many patch samples the method draws per context (0: the experiment's Samples). Each sample is
	// its own arm, whose patch step (and what reads it) is its own node; the steps above the patch are shared.
	Samples int `json:"samples,omitempty"`
}

// MaxSamples bounds samples: each one is a paid model call per issue.
const MaxSamples = 100

// SamplesOf is how many patch samples method m draws in experiment e: its own, the experiment's, or one.
func SamplesOf(e *Experiment, m Method) int {
	switch {
	case m.Samples > 0:
		return m.Samples
	case e.Samples > 0:
		return e.Samples
	}
	return 1
}

// Step is one node of a method's DAG.
type Step struct {
	ID       string         `json:"id"`
	Activity string         `json:"activity"`
	Params   map[string]any `json:"params,omitempty"`
	// Inputs maps the activity's input names to ids of other steps of the same method.
	Inputs map[string]string `json:"inputs,omitempty"`
	// Borrowed marks a step taken from another method (under a namespaced id, e.g. "anchor.context"): it runs and
	// its failure fails this method's row, but its row fields describe the other method's row, not this one's.
	Borrowed bool `json:"borrowed,omitempty"`
}

// Grading says how patches are graded.
type Grading struct {
	// Executor runs the tests: local or docker.
	Executor string `json:"executor"`
	// Timeout per instance (per run, when reruns are made).
	Timeout Duration `json:"timeout"`
	// Reruns re-runs a grade that did not resolve up to this many times (flake guard); the row records every
	// attempt's outcome and whether they disagreed.
	Reruns int `json:"reruns,omitempty"`
	// ModelTests says what becomes of the model patch's changes to test files: "drop" (reset to base_commit before
	// the tests run, as the harness resets the test patch's files; the row lists them) or "keep".
	ModelTests string `json:"model_tests,omitempty"`
	// Tests says which Python tests run: "files" (the test files of the test patch, as the SWE-bench harness does)
	// or "listed" (exactly the FAIL_TO_PASS and PASS_TO_PASS ids; the docker executor passes them to pytest as node ids).
	Tests string `json:"tests,omitempty"`
	// Isolation confines the code under test of the local executor: "sandbox" (a dedicated uid in its own pid,
	// mount and network namespaces where the worker runs as root on Linux; rows say grade_isolation) or "none" (its
	// own process group and an allowlisted environment only, for test suites that need the machine or the network).
	Isolation string `json:"isolation,omitempty"`
	// TestCmd, LogParser, Python, Namespace, Network and Docker configure the executors (grading/executor.Config).
	TestCmd TestCommand `json:"test_cmd,omitzero"`

	LogParser string `json:"log_parser,omitempty"`
	Python    string `json:"python,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Network   string `json:"network,omitempty"`
	Docker    string `json:"docker,omitempty"`
	// GoProxy is the GOPROXY the local executor downloads a Go module's requirements from before its offline build
	// (a URL list, or file:///folder); {dataset_dir} is replaced by the dataset file's folder. Empty: the worker's.
	GoProxy string `json:"goproxy,omitempty"`
	// InstallConfig states the Python environment of every instance whose dataset row has none, in the form of a
	// SWE-rebench row's install_config (test_cmd, log_parser, eval_commands, install, pre_install, packages,
	// pip_packages, python); both executors honour it (docs/grading.md, "Python environments").
	InstallConfig json.RawMessage `json:"install_config,omitempty"`
	// PythonWheels is a folder of wheels (or a package index URL) from which the local executor installs, offline,
	// what a stated environment needs and the machine lacks; {dataset_dir} is replaced by the dataset's folder.
	PythonWheels string `json:"python_wheels,omitempty"`
}

// TestCommand is grading.test_cmd: a string is the command of every instance; an object maps languages ("go",
// "python") and repositories ("owner/name") to commands, a repository's winning over its language's, and instances
// it does not cover get the executor's default. An instance is Go when its worktree has a go.mod, else Python.
type TestCommand struct {
	// All is the string form.
	All string
	// By is the object form.
	By map[string]string
}

// TestCmdLanguages are the language keys of test_cmd's object form.
var TestCmdLanguages = []string{"go", "python"}

// IsZero reports an unset test_cmd (for omitzero).
func (c TestCommand) IsZero() bool { return c.All == "" && len(c.By) == 0 }

// MarshalJSON writes the form the spec used: a string, or an object.
func (c TestCommand) MarshalJSON() ([]byte, error) {
	if len(c.By) > 0 {
		return json.Marshal(c.By)
	}
	return json.Marshal(c.All)
}

// UnmarshalJSON reads a string or an object of strings.
func (c *TestCommand) UnmarshalJSON(b []byte) error {
	*c = TestCommand{}
	if err := json.Unmarshal(b, &c.All); err == nil {
		return nil
	}
	if err := json.Unmarshal(b, &c.By); err != nil || c.By == nil {
		c.By = nil
		return fmt.Errorf("test_cmd must be a string, or an object mapping %s or \"owner/name\" to strings, got %s",
			strings.Join(TestCmdLanguages, ", "), b)
	}
	return nil
}

// String and Set make a TestCommand a command-line flag of its string form.
func (c *TestCommand) String() string {
	if c == nil {
		return ""
	}
	return c.All
}

// Set implements flag.Value: a command, or (starting with "{") the object form as JSON.
func (c *TestCommand) Set(s string) error {
	if strings.HasPrefix(strings.TrimSpace(s), "{") {
		return c.UnmarshalJSON([]byte(s))
	}
	*c = TestCommand{All: s}
	return nil
}

// Budget is the longest a grade may take: the timeout for the run and for each rerun.
func (g Grading) Budget() time.Duration { return g.Timeout.D() * time.Duration(1+max(g.Reruns, 0)) }

// Limits bound a sweep.
type Limits struct {
	// Concurrency is the number of issues in flight at once.
	Concurrency int `json:"concurrency"`
	// Retries is the number of attempts of a failing activity before its step is recorded as failed.
	Retries int `json:"retries"`
	// Queues bound each task queue kind: activities per worker and per second.
	Queues QueueLimits `json:"queues,omitzero"`
	// SpendUSD stops new paid model calls once the run folder's calls have cost this many dollars (0: no cap).
	// The sweep waits instead of failing, so raising the cap and running again continues it. Not part of what
	// a sweep computes: changing it never restarts one.
	SpendUSD float64 `json:"spend_usd,omitempty"`
	// Providers bound calls per provider name (openai, ...) across every worker of the run.
	Providers map[string]ProviderLimit `json:"providers,omitempty"`
}

// ProviderLimit bounds the calls to one provider; zero means unlimited.
type ProviderLimit struct {
	// RPS caps the calls started per second.
	RPS float64 `json:"rps,omitempty"`
	// InFlight caps the calls running at once.
	InFlight int `json:"in_flight,omitempty"`
}

// Debug holds knobs for testing ctxlab itself.
type Debug struct {
	// SlowActivities delays every activity by this much, so that a test can kill a sweep in the middle.
	SlowActivities Duration `json:"slow_activities,omitempty"`
}

// Duration is a time.Duration written as "30m" in specs and JSON.
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a string such as "30m0s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "30m", "1h30m" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var secs float64
		if err2 := json.Unmarshal(b, &secs); err2 != nil {
			return fmt.Errorf("duration must be a string like \"30m\" or a number of seconds, got %s", b)
		}
		*d = Duration(secs * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}
