package llm

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/tokens"
	"ctxlab/specs"
)

// Implementation is a provider's code, registered against its declaration (specs.Provider) by the init of its file
// (Register): what the call path, the checks and the tokenizers ask of a provider. Everything but New may be left
// out by a provider that has no such thing.
type Implementation struct {
	// New returns the client of model m; c holds the options every provider takes. Its calls go through the retry
	// loop (retry.go), the same for every provider: a client makes one attempt at a time.
	New func(m specs.Model, c Config) (Client, error)
	// Usage reads an answer's token usage from its body, refusing counts no real server sends (numbers.go).
	Usage func(body []byte) (Usage, error)
	// Errors is how the provider's endpoint says what went wrong, and which kind of failure that is.
	Errors ErrorShape
	// MaxTokens is the answer cap a call asks for, from the spec's max_tokens, the endpoint's base URL and the
	// model's context as the endpoint reported it (0: unknown): the response cache keys on it and the spend cap
	// reserves it. nil: the spec's max_tokens.
	MaxTokens func(specMax int, base string, window int) int
	// Window asks the endpoint how large a model's context is; nil: a call's answer is capped by max_tokens alone.
	Window func(ctx context.Context, modelID string) Window
	// Counter counts with the provider's own tokenizer for a model id: the scheme its declaration's Counting names.
	Counter func(ctx context.Context, modelID string) (tokens.Counter, error)
	// Check asks, before a sweep, whether the provider can answer for m: its endpoint serves the id and takes the
	// key (starter check).
	Check func(ctx context.Context, m specs.Model, timeout time.Duration) ModelCheck
}

// ErrorShape is how an endpoint's errors read: Fields takes an error body apart (code, type, message), Kind says
// which kind of failure a status with those is.
type ErrorShape struct {
	Fields func(body []byte) (code, typ, msg string)
	Kind   func(status int, code, typ, msg string) errkind.Kind
}

// Client is a provider's side of a call: it checks a request and builds what is sent, once (Prepare).
type Client interface {
	Prepare(ctx context.Context, req Request) (Attempt, *Error)
}

// Attempt is a prepared call, which the retry loop makes as often as it decides.
type Attempt struct {
	// Send makes one attempt: the answer, or the failure and the wait the endpoint asked for (0: none).
	Send func(ctx context.Context) (Response, *Error, time.Duration)
	// slots is the call's place in the context a server's slots share, held while an attempt is in flight; nil
	// for an API that has no slots.
	slots *slotGate
}

// ModelCheck is what a provider's check found before a sweep.
type ModelCheck struct {
	// Served: the endpoint at Host serves the model.
	Served bool
	Host   string
	// Problem, when set, keeps the sweep from running; Fix says what to do.
	Problem, Fix string
	// Note says what could not be checked.
	Note string
	// Window is the model's context window as the endpoint reports it (zero: it does not say), and Count, when
	// set, counts a text in the server's own tokens as a prompt holds it (nil: the spec's tokenizer counts).
	Window Window
	Count  func(text string) (int, error)
}

// implementation is a registered provider: its declaration and its code.
type implementation struct {
	decl specs.Provider
	Implementation
}

var (
	implementationsMu sync.RWMutex
	implementations   = map[string]implementation{}
)

// Register makes impl the implementation of the declared provider p, and its Counter the tokenizer scheme p's
// Counting names. It panics when p is not declared, is registered twice, or declares what impl does not do (a
// counting scheme, a window discovery, a check) or the other way round. The returned function undoes it, for a
// provider a test declares.
func Register(p specs.Provider, impl Implementation) (unregister func()) {
	if d, ok := specs.Providers[p.Name]; !ok || d.Name != p.Name {
		panic("llm: provider " + p.Name + " is not declared (specs.DeclareProvider)")
	}
	switch {
	case impl.New == nil:
		panic("llm: provider " + p.Name + ": an implementation needs New")
	case p.Paid && impl.Usage == nil:
		panic("llm: provider " + p.Name + ": a paid provider's answers are priced by their usage: it needs Usage")
	case (p.Counting.Scheme != "") != (impl.Counter != nil), (p.Window != "") != (impl.Window != nil),
		(p.Check != "") != (impl.Check != nil):
		// The declaration says what the docs' table shows: the implementation does exactly that.
		panic("llm: provider " + p.Name + ": a Counter, Window and Check exactly when the declaration says " +
			"(Counting.Scheme, Window, Check)")
	}
	implementationsMu.Lock()
	defer implementationsMu.Unlock()
	if _, dup := implementations[p.Name]; dup {
		panic("llm: provider " + p.Name + " registered twice")
	}
	implementations[p.Name] = implementation{decl: p, Implementation: impl}
	if p.Counting.Scheme != "" {
		// Bounded by the counter's own timeout, not an activity's context: callers count deep inside code that
		// holds none.
		tokens.Register(p.Counting.Scheme, func(id string) (tokens.Counter, error) {
			return impl.Counter(context.Background(), id)
		})
	}
	return func() {
		implementationsMu.Lock()
		defer implementationsMu.Unlock()
		delete(implementations, p.Name)
	}
}

// Implemented returns the implementation of the provider named name.
func Implemented(name string) (Implementation, bool) {
	impl, ok := implementationOf(name)
	return impl.Implementation, ok
}

func implementationOf(name string) (implementation, bool) {
	implementationsMu.RLock()
	defer implementationsMu.RUnlock()
	impl, ok := implementations[name]
	return impl, ok
}

// CounterFor returns the counter of tokenizer scheme for model id: the provider whose declaration counts with it.
func CounterFor(ctx context.Context, scheme, id string) (tokens.Counter, bool, error) {
	for _, n := range specs.ProviderNames() {
		if impl, ok := implementationOf(n); ok && impl.decl.Counting.Scheme == scheme {
			c, err := impl.Counter(ctx, id)
			return c, true, err
		}
	}
	return nil, false, nil
}

// Config holds what Options set: how the retry loop tries a call again, and what a provider's client reads.
type Config struct {
	// Attempts is how many times one Complete may call the endpoint in total.
	Attempts int
	// BaseDelay is the first backoff, doubled each further retry (with jitter) up to MaxDelay.
	BaseDelay, MaxDelay time.Duration
	// CallTimeout bounds one attempt.
	CallTimeout time.Duration
	HTTPClient  *http.Client
	Log         zerolog.Logger
	// Tokenizer estimates a prompt's tokens where the provider needs an estimate.
	Tokenizer string
}

// Option configures New.
type Option func(*Config)

// WithAttempts sets how many times one Complete may call the endpoint in total (default 4; at least 1).
func WithAttempts(n int) Option { return func(c *Config) { c.Attempts = max(n, 1) } }

// WithBaseDelay sets the first backoff (default 1s); each further retry doubles it, with jitter.
func WithBaseDelay(d time.Duration) Option { return func(c *Config) { c.BaseDelay = d } }

// WithMaxDelay caps one wait between attempts (default 60s). A Retry-After longer than this ends the retries: the
// call fails with errkind.RateLimit and the activity's own retry policy comes back later.
func WithMaxDelay(d time.Duration) Option { return func(c *Config) { c.MaxDelay = d } }

// WithCallTimeout bounds one HTTP attempt (default 5 minutes). An attempt that runs out fails with errkind.Timeout and
// is retried.
func WithCallTimeout(d time.Duration) Option { return func(c *Config) { c.CallTimeout = d } }

// WithHTTPClient sets the HTTP client (default: a plain http.Client; timeouts come from WithCallTimeout).
func WithHTTPClient(h *http.Client) Option { return func(c *Config) { c.HTTPClient = h } }

// WithTokenizer names the tokenizer that estimates a prompt's tokens when the server cannot count them (default
// o200k_base).
func WithTokenizer(name string) Option { return func(c *Config) { c.Tokenizer = name } }

// WithLogger sets where retries are logged (default: nowhere). Log lines never hold the key.
func WithLogger(l zerolog.Logger) Option { return func(c *Config) { c.Log = l } }

// New returns the provider of model m: its declared implementation's client behind the retry loop. Defaults: 4
// attempts, 1 s to 1 min backoff, 5 min per attempt, o200k_base estimates. A model whose provider needs an id and
// has none is refused (errkind.BadRequest), as is a provider this build does not implement (unsupported).
func New(m specs.Model, opts ...Option) (Provider, error) {
	impl, ok := implementationOf(m.Provider)
	if !ok {
		return nil, &Error{Kind: errkind.Unsupported, Msg: fmt.Sprintf("model %s: provider %q is not available in "+
			"this build (%s)", m.Name, m.Provider, strings.Join(implementedNames(), ", "))}
	}
	cfg := Config{Attempts: 4, BaseDelay: time.Second, MaxDelay: time.Minute, CallTimeout: 5 * time.Minute,
		Log: zerolog.Nop(), Tokenizer: specs.FallbackTokenizer}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if impl.decl.NeedsID && strings.TrimSpace(m.ID) == "" {
		return nil, &Error{Kind: errkind.BadRequest, Msg: fmt.Sprintf("model %q has no id: set the model's id in the spec", m.Name)}
	}
	client, err := impl.New(m, cfg)
	if err != nil {
		return nil, err
	}
	return retrying{client: client, cfg: cfg, model: m}, nil
}

func implementedNames() []string {
	var names []string
	for _, n := range specs.ProviderNames() {
		if _, ok := implementationOf(n); ok {
			names = append(names, n)
		}
	}
	return names
}

// retrying is a client behind the retry loop: what New returns.
type retrying struct {
	client Client
	cfg    Config
	model  specs.Model
}

// Complete prepares req and makes its attempts (retryLoop).
func (r retrying) Complete(ctx context.Context, req Request) (Response, error) {
	a, perr := r.client.Prepare(ctx, req)
	if perr != nil {
		return Response{}, perr
	}
	return retryLoop{cfg: r.cfg, model: r.model, req: req, slots: a.slots}.run(ctx, a.Send)
}

// BaseURL is the base URL model m's calls go to as the environment names it (its provider's Env.BaseURL, else its
// default); "" for a provider that calls no endpoint. It checks nothing and needs no key, so a response cache can
// look up answers with it on a machine that holds no key.
func BaseURL(m specs.Model) string {
	p, _ := specs.ProviderOf(m)
	return baseURLOf(p)
}

func baseURLOf(p specs.Provider) string {
	if p.Env.BaseURL == "" {
		return ""
	}
	if b := strings.TrimSpace(os.Getenv(p.Env.BaseURL)); b != "" {
		return b
	}
	return p.Env.DefaultBaseURL
}

// MaxTokens is the answer cap a call of model m asks for against endpoint, whose context is window tokens (0:
// unknown): its provider's (Implementation.MaxTokens), else the spec's max_tokens.
func MaxTokens(m specs.Model, endpoint string, window int) int {
	if impl, ok := implementationOf(m.Provider); ok && impl.MaxTokens != nil {
		return impl.MaxTokens(m.MaxTokens, endpoint, window)
	}
	return m.MaxTokens
}

// ContextWindow asks model m's endpoint how large its context is (Implementation.Window); Window{} when its
// provider does not ask.
func ContextWindow(ctx context.Context, m specs.Model) Window {
	if impl, ok := implementationOf(m.Provider); ok && impl.Window != nil {
		return impl.Window(ctx, m.ID)
	}
	return Window{}
}

// DiscoversWindow reports whether model m's provider asks its endpoint how large the model's context is.
func DiscoversWindow(m specs.Model) bool {
	impl, ok := implementationOf(m.Provider)
	return ok && impl.Window != nil
}

// Host is the host provider p's calls go to as the environment names it (the variable that names it, when its
// value is no URL).
func Host(p specs.Provider) string {
	if h := hostOf(baseURLOf(p)); h != "" {
		return h
	}
	return p.Env.BaseURL
}
