package llm

import (
	"context"
	"strings"
	"testing"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/specs"
)

// TestRegisterHoldsTheDeclaration: an implementation does what its declaration says, no more and no less, and only
// a declared provider is registered; a provider nothing implements is unsupported, never a call.
func TestRegisterHoldsTheDeclaration(t *testing.T) {
	p := specs.DeclareProvider(specs.Provider{Name: "register_test", Paid: true, Window: "its /props",
		Env: specs.ProviderEnv{BaseURL: "REGISTER_TEST_URL"}})
	t.Cleanup(func() { delete(specs.Providers, p.Name) })
	newClient := func(specs.Model, Config) (Client, error) { return nil, nil }
	window := func(context.Context, string) Window { return Window{} }
	usage := func([]byte) (Usage, error) { return Usage{}, nil }
	panics := func(what string, register func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: registered", what)
			}
		}()
		register()
	}
	panics("no window discovery though the declaration says one", func() {
		Register(p, Implementation{New: newClient, Usage: usage})
	})
	panics("a paid provider without a usage reader", func() {
		Register(p, Implementation{New: newClient, Window: window})
	})
	panics("a check the declaration does not say", func() {
		Register(p, Implementation{New: newClient, Usage: usage, Window: window,
			Check: func(context.Context, specs.Model, time.Duration) ModelCheck { return ModelCheck{} }})
	})
	panics("an undeclared provider", func() {
		Register(specs.Provider{Name: "undeclared_test"}, Implementation{New: newClient})
	})
	if _, err := New(specs.Model{Name: "m", Provider: p.Name, ID: "x"}); KindOf(err) != errkind.Unsupported ||
		!strings.Contains(err.Error(), `provider "register_test" is not available in this build`) {
		t.Fatalf("a provider nothing implements: %v", err)
	}
	t.Cleanup(Register(p, Implementation{New: newClient, Usage: usage, Window: window}))
	if !DiscoversWindow(specs.Model{Provider: p.Name}) {
		t.Fatal("registered, the provider does not discover windows")
	}
}
