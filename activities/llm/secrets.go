package llm

import (
	"os"
	"sort"
	"strings"
)

// Redacted replaces a secret wherever one is scrubbed.
const Redacted = "[redacted]"

// minSecretLen keeps short values (flags, small numbers) from being scrubbed out of ordinary text.
const minSecretLen = 8

// secretNameParts mark an environment variable as holding a secret: OPENAI_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY,
// PGPASSWORD and the like.
var secretNameParts = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}

// SecretValues are the values the process holds that must never be stored: OPENAI_API_KEY and every environment
// variable whose name says it holds a key, token, secret or password, at least minSecretLen bytes long. They are read
// on every call, so a key set after start (tests, a reloaded environment) is covered.
func SecretValues() []string {
	var vals []string
	for _, kv := range os.Environ() {
		name, val, ok := strings.Cut(kv, "=")
		val = strings.TrimSpace(val)
		if !ok || len(val) < minSecretLen || !secretName(name) {
			continue
		}
		vals = append(vals, val)
	}
	// Longest first: a secret that contains another is replaced whole.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	return vals
}

func secretName(name string) bool {
	up := strings.ToUpper(name)
	for _, part := range secretNameParts {
		if strings.Contains(up, part) {
			return true
		}
	}
	return false
}

// ScrubSecrets replaces every secret value the process holds (SecretValues) in s. It is the one scrub every model
// answer and model error goes through before anything stores or logs it; unlike Endpoint.Scrub it leaves text that
// merely looks like a bearer token alone, so patches that mention "Bearer" survive byte for byte.
func ScrubSecrets(s string) string {
	return scrubValues(s, SecretValues())
}

func scrubValues(s string, vals []string) string {
	for _, v := range vals {
		if v != "" && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s
}

// Scrubbed is the response with every secret the process holds removed from its text and model name.
func (r Response) Scrubbed() Response {
	vals := SecretValues()
	r.Text = scrubValues(r.Text, vals)
	r.Model = scrubValues(r.Model, vals)
	return r
}
