package steps

import (
	"testing"

	"ctxlab/activities/llm"
	"ctxlab/specs"
)

// TestEveryProviderIsImplemented: every declared provider has an implementation registered wherever the steps run
// (package llm registers its own, the steps link offline's and replay's).
func TestEveryProviderIsImplemented(t *testing.T) {
	if len(specs.Providers) < 4 {
		t.Fatalf("only %d providers declared", len(specs.Providers))
	}
	for _, n := range specs.ProviderNames() {
		if _, ok := llm.Implemented(n); !ok {
			t.Errorf("provider %s is declared (specs.DeclareProvider) but not implemented (llm.Register)", n)
		}
	}
}
