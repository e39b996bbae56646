package specs

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Provider declares one model provider a spec may name (a model's provider), once: its name, the environment it
// reads, what a model of it must hold, how its models count tokens, and what it costs. The validation, the plan's
// tokenizers, the steps' call path, starter check and docs/models.md's table of providers read it; its
// implementation (activities/llm, registered with llm.Register against this declaration) supplies the client, its
// error shapes and usage reader, the window discovery, the counter and the check.
type Provider struct {
	Name string
	// Summary is one line for docs/models.md's table: what the provider answers with.
	Summary string
	// Env is what the provider reads from the environment: never from a spec, so that no endpoint, key or folder
	// reaches Temporal history, logs or results.
	Env ProviderEnv
	// NeedsID: a model of this provider must name the provider's model id.
	NeedsID bool
	// Paid: its answers cost money. Its calls go through the response cache, the spend cap, limits.providers and the
	// calls ledger. A provider that is not paid calls no endpoint either: a step calling it runs in process
	// (Kind.NoEndpoint).
	Paid bool
	// StandIn: it is not a language model. It answers from what the step attaches instead of the prompt
	// (llm.Request.Offline), and its usage is ctxlab's own count, so rows carry no cost split and no model served.
	StandIn bool
	// Counting is how a model of this provider counts with tokenizer 'endpoint'; zero: it cannot.
	Counting Counting
	// Window says where the provider reads a model's context window, for the docs ("": it does not).
	Window string
	// Check says what starter check asks before a sweep, for the docs ("": nothing).
	Check string
	// Validate, when set, checks what else a model of this provider must hold: the field at fault (under the model's
	// path) and the problem, "" when there is none.
	Validate func(m Model) (field, problem string)
}

// ProviderEnv names the environment variables a provider reads.
type ProviderEnv struct {
	// BaseURL names the variable of the endpoint's base URL, DefaultBaseURL the endpoint when it is unset, and
	// Example a well-formed one, for the error of a malformed one.
	BaseURL, DefaultBaseURL, Example string
	// Key names the variable of the API key; KeylessLoopback lets a server on a loopback host run without one.
	Key             string
	KeylessLoopback bool
	// Folder names the variable of a folder the provider reads its answers from.
	Folder string
}

// Counting is a provider's own tokenizer: tokenizer 'endpoint' on a model of id ID counts with Scheme + ":" + ID
// (a scheme of activities/tokens, registered with the provider's implementation).
type Counting struct {
	Scheme string
	// With says what counts, for the docs.
	With string
	// Metered: counts are rate-limited apart from calls, so a call's reservation under the spend cap estimates its
	// prompt (o200k_base and half again) rather than ask.
	Metered bool
}

// Providers lists every provider a spec may name, by name: what the declarations (DeclareProvider) registered.
var Providers = map[string]Provider{}

// DeclareProvider registers a provider in Providers and returns it; it panics on a malformed declaration or a name
// taken. Providers of ctxlab are declared in this package (provider_NAME.go); a test may declare its own (and delete
// it from Providers after).
func DeclareProvider(p Provider) Provider {
	switch {
	case p.Name == "" || strings.ContainsAny(p.Name, ": "):
		panic(fmt.Sprintf("specs: provider %q: a provider needs a name without spaces or colons", p.Name))
	case p.Paid && p.Env.BaseURL == "":
		panic("specs: provider " + p.Name + ": a paid provider calls an endpoint, whose base URL Env.BaseURL names")
	case p.Counting.Scheme == TokenizerModel || slices.Contains(Encodings, p.Counting.Scheme):
		panic("specs: provider " + p.Name + ": its counting scheme is a tokenizer's name")
	}
	if _, dup := Providers[p.Name]; dup {
		panic("specs: provider " + p.Name + " declared twice")
	}
	Providers[p.Name] = p
	return p
}

// ProviderNames lists the declared providers' names in order, for error messages.
func ProviderNames() []string {
	names := make([]string, 0, len(Providers))
	for n := range Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ProviderOf is the declaration of a model's provider; false for a provider no declaration names.
func ProviderOf(m Model) (Provider, bool) {
	p, ok := Providers[m.Provider]
	return p, ok
}

// paidProviders names the paid providers, in order.
func paidProviders() []string {
	var paid []string
	for _, n := range ProviderNames() {
		if Providers[n].Paid {
			paid = append(paid, n)
		}
	}
	return paid
}

// countingSchemes are the providers' counting schemes: TokenizerEndpoint's own first, the others in order.
func countingSchemes() []string {
	var schemes []string
	for _, n := range ProviderNames() {
		if c := Providers[n].Counting.Scheme; c != "" && !slices.Contains(schemes, c) {
			schemes = append(schemes, c)
		}
	}
	if i := slices.Index(schemes, TokenizerEndpoint); i > 0 {
		schemes = slices.Insert(slices.Delete(schemes, i, i+1), 0, TokenizerEndpoint)
	}
	return schemes
}

// countingProviders names the providers whose models count with tokenizer 'endpoint', and with what.
func countingProviders() string {
	var out []string
	for _, n := range ProviderNames() {
		if c := Providers[n].Counting; c.Scheme != "" {
			out = append(out, fmt.Sprintf("provider %s (%s)", n, c.With))
		}
	}
	return strings.Join(out, ", ")
}

// ProviderTable is docs/models.md's table of providers, written from the declarations.
func ProviderTable() string {
	var b strings.Builder
	b.WriteString("| provider | answers with | environment | model id | tokenizer `endpoint` | context window | " +
		"`starter check` asks | paid |\n|---|---|---|---|---|---|---|---|\n")
	cell := func(s string) string {
		if s == "" {
			return "none"
		}
		return s
	}
	for _, n := range ProviderNames() {
		p := Providers[n]
		var env []string
		for _, v := range []string{p.Env.BaseURL, p.Env.Key, p.Env.Folder} {
			if v != "" {
				env = append(env, "`"+v+"`")
			}
		}
		id := "none"
		if p.NeedsID {
			id = "required"
		}
		paid := "no"
		if p.Paid {
			paid = "yes: response cache, spend cap, `limits.providers." + n + "`, ledger"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", n, p.Summary, cell(strings.Join(env, ", ")),
			id, cell(p.Counting.With), cell(p.Window), cell(p.Check), paid)
	}
	return b.String()
}

// MeteredTokenizer reports whether tokenizer name ("scheme:model") counts with a provider's metered scheme
// (Counting.Metered).
func MeteredTokenizer(name string) bool {
	scheme, _, ok := strings.Cut(name, ":")
	for _, p := range Providers {
		if ok && p.Counting.Scheme == scheme && p.Counting.Metered {
			return true
		}
	}
	return false
}
