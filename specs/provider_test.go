package specs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsShowProviders: docs/models.md's table of providers is ProviderTable's, written from the declarations.
func TestDocsShowProviders(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "models.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), ProviderTable()) {
		t.Fatalf("docs/models.md does not hold specs.ProviderTable(); put this in its Providers section:\n%s",
			ProviderTable())
	}
}

// TestResolveTokenizerByDeclaration: tokenizer 'endpoint' becomes the scheme the model's provider counts with.
func TestResolveTokenizerByDeclaration(t *testing.T) {
	e := &Experiment{Tokenizer: TokenizerEndpoint}
	for _, c := range []struct{ provider, want string }{{"openai", "endpoint:m-1"}, {"anthropic", "anthropic:m-1"},
		{"replay", "endpoint:m-1"}} {
		if got := ResolveTokenizer(e, Model{Provider: c.provider, ID: "m-1"}); got != c.want {
			t.Errorf("%s: %s, want %s", c.provider, got, c.want)
		}
	}
	if !MeteredTokenizer("anthropic:m-1") || MeteredTokenizer("endpoint:m-1") || MeteredTokenizer("o200k_base") {
		t.Error("only Anthropic's count_tokens is metered")
	}
}
