package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/specs"
)

// Endpoint is the endpoint a provider's calls go to, as the environment names it (the declaration's Env).
type Endpoint struct {
	Base, Host string
	// key is kept only to send it and to scrub it from anything the endpoint sends back; keyEnv names the variable
	// it came from.
	key, keyEnv string
	// wire is how the provider's answers and errors read (its Implementation's Usage and Errors).
	wire Implementation
}

// EndpointFromEnv is the OpenAI-compatible endpoint the environment names (the openai provider's), which chat
// completions and embeddings share.
func EndpointFromEnv() (Endpoint, error) { return ReadEndpoint(specs.OpenAI) }

// EndpointOf is the endpoint of model m's provider (ReadEndpoint).
func EndpointOf(m specs.Model) (Endpoint, error) {
	p, ok := specs.ProviderOf(m)
	if !ok || p.Env.BaseURL == "" {
		return Endpoint{}, &Error{Kind: errkind.BadRequest, Msg: fmt.Sprintf("model %s: provider %q calls no endpoint",
			m.Name, m.Provider)}
	}
	return ReadEndpoint(p)
}

// ReadEndpoint reads the base URL (default the declaration's) and the key of provider p from the variables its
// declaration names. A missing key is an errkind.Auth error unless p lets a server on a loopback host run without one.
func ReadEndpoint(p specs.Provider) (Endpoint, error) {
	v := p.Env
	base := strings.TrimSpace(os.Getenv(v.BaseURL))
	key := strings.TrimSpace(os.Getenv(v.Key))
	host := hostOf(v.DefaultBaseURL)
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// The value is not repeated: a malformed URL may carry credentials.
			return Endpoint{}, &Error{Kind: errkind.BadRequest, Msg: v.BaseURL + " is not an http(s) URL such as " + v.Example}
		}
		host = u.Hostname()
	} else {
		base = v.DefaultBaseURL
	}
	if key == "" && !(v.KeylessLoopback && isLoopback(host)) {
		msg := fmt.Sprintf("%s is not set: export it to call %s", v.Key, host)
		if v.KeylessLoopback {
			msg += " (only servers on localhost may run without a key)"
		}
		return Endpoint{}, &Error{Kind: errkind.Auth, Msg: msg}
	}
	impl, _ := implementationOf(p.Name)
	return Endpoint{Base: base, Host: host, key: key, keyEnv: v.Key, wire: impl.Implementation}, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Reply is what one attempt's SDK call gave, in the terms every provider's answer is read in.
type Reply struct {
	Body        []byte // the answer's JSON: its usage, or an error sent with a 200
	Text, Model string
	// Missing, when set, says what the answer lacks to be one (no choices, no content): the attempt failed, billed
	// for the usage its body reports.
	Missing string
}

// Exchange makes one attempt through a provider's SDK (send, which records the HTTP response in hres and sends the
// call's task in offlinetask.TaskHeader) and reads what came back as the provider's declaration says: its error shapes, its
// usage reader. It returns the answer priced with price, or the failure and the wait the endpoint asked for (0:
// none). An answer is scrubbed too: an endpoint may echo the key in it, and answers are cached and stored.
func (e Endpoint) Exchange(ctx context.Context, timeout time.Duration, price specs.Price,
	send func(actx context.Context, hres **http.Response) (Reply, error)) (Response, *Error, time.Duration) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var hres *http.Response
	rep, err := send(actx, &hres)
	if le := answerTooLarge(err, hres); le != nil {
		return Response{}, le, 0
	}
	if err != nil {
		return Response{}, e.Classify(ctx, actx, hres, err, timeout), retryAfter(hres)
	}
	if rep.Missing != "" {
		paid, _ := e.usage(rep.Body) // impossible usage is no money
		// An error sent with 200 (OpenAI's insufficient_quota among them) is classified as if sent with its
		// status: a quota error is not retried as a broken answer.
		if st, kind, em, ok := e.bodyError(statusOf(hres), rep.Body); ok {
			return Response{}, &Error{Kind: kind, Status: st, Msg: e.Scrub(rep.Missing + ": " + em), Paid: paid}, 0
		}
		return Response{}, &Error{Kind: errkind.BadResponse, Status: statusOf(hres), Msg: e.Scrub(rep.Missing), Paid: paid}, 0
	}
	// Usage is money: counts that cannot be real make the answer a broken one (retried), never a negative or
	// absurd cost.
	u, uerr := e.usage(rep.Body)
	if uerr != nil {
		return Response{}, &Error{Kind: errkind.BadResponse, Status: statusOf(hres), Msg: e.Scrub(
			"the endpoint reported impossible usage: " + uerr.Error())}, 0
	}
	return Response{Text: e.ScrubText(rep.Text), Usage: u, CostUSD: Cost(u, price), Model: e.ScrubText(rep.Model)}, nil, 0
}

// usage reads an answer's usage with its provider's reader, or as OpenAI-compatible servers report it for an
// endpoint read without a provider.
func (e Endpoint) usage(body []byte) (Usage, error) {
	if e.wire.Usage == nil {
		return usageOf(body)
	}
	return e.wire.Usage(body)
}

// errorShape is the endpoint's error shapes: its provider's, or the OpenAI-compatible ones for an endpoint read
// without a provider.
func (e Endpoint) errorShape() ErrorShape {
	if e.wire.Errors.Fields == nil || e.wire.Errors.Kind == nil {
		return OpenAICompatibleErrors
	}
	return e.wire.Errors
}

func statusOf(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

// Classify turns a failed call into an *Error: ctx is the caller's context, actx the attempt's (with its timeout),
// hres the HTTP response if one came. The SDK's own error is not kept: it holds the request, and with it the
// Authorization header.
func (e Endpoint) Classify(ctx, actx context.Context, hres *http.Response, err error, timeout time.Duration) *Error {
	switch {
	case ctx.Err() != nil:
		return &Error{Kind: errkind.Timeout, Msg: "the call was cancelled", Err: ctx.Err()}
	case actx.Err() != nil:
		return &Error{Kind: errkind.Timeout, Msg: fmt.Sprintf("no answer within %s", timeout), Err: context.DeadlineExceeded}
	case hres == nil:
		return &Error{Kind: errkind.Timeout, Msg: e.Scrub("connection failed: " + err.Error())}
	case hres.StatusCode < 400:
		return &Error{Kind: errkind.BadResponse, Status: hres.StatusCode, Msg: e.Scrub("the response body does not parse: " + err.Error())}
	}
	var body []byte
	if hres.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(hres.Body, 64<<10))
	}
	status := hres.StatusCode
	shape := e.errorShape()
	code, typ, msg := shape.Fields(body)
	fromBody := msg != "" && !strings.HasPrefix(msg, "<")
	if msg == "" {
		msg = http.StatusText(status)
	}
	ce := &Error{Kind: shape.Kind(status, code, typ, msg), Status: status, Msg: e.Scrub(msg), typ: typ,
		fromBody: fromBody}
	if ce.Kind == errkind.Auth {
		ce.Msg += fmt.Sprintf(" (check %s)", cmp.Or(e.keyEnv, specs.OpenAI.Env.Key))
	}
	return ce
}

// rawString returns a JSON string's value, or a number's or object's text.
func rawString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

var bearerRE = regexp.MustCompile(`(?i)bearer\s+[^\s"',;]+`)

// Scrub removes the key, every other secret the process holds (ScrubSecrets), and any bearer token an endpoint
// echoes back, from a message.
func (e Endpoint) Scrub(s string) string {
	return bearerRE.ReplaceAllString(e.ScrubText(s), "Bearer "+Redacted)
}

// ScrubText removes the key and every other secret the process holds from an answer, leaving the rest byte for
// byte (no bearer-token pattern: an answer's code may say "Bearer").
func (e Endpoint) ScrubText(s string) string {
	if e.key != "" {
		s = strings.ReplaceAll(s, e.key, Redacted)
	}
	return ScrubSecrets(s)
}

// retryAfter reads the wait an endpoint asks for: retry-after-ms (OpenAI), or Retry-After in seconds or as an
// HTTP date. It is 0 when there is none.
func retryAfter(r *http.Response) time.Duration {
	if r == nil {
		return 0
	}
	if v := r.Header.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := r.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
