package layers

import (
	"os/exec"
	"strings"
	"testing"

	"ctxlab/specs"
)

// TestProviderNamesAreSpelledOnce fails for every string literal in a non-test file of the module that spells a
// declared provider's name (specs.Providers) outside its declaration, specs/provider_NAME.go: code reads a provider's
// declaration (specs.OpenAI.Name, its fields) or asks its registered implementation (llm.New, llm.Implemented),
// never switches on names, so that a provider is its declaration and its implementation (docs/adding-a-provider.md).
func TestProviderNamesAreSpelledOnce(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	names := map[string]bool{}
	for n := range specs.Providers {
		names[n] = true
	}
	if len(names) < 4 {
		t.Fatalf("only %d providers declared in specs.Providers", len(names))
	}
	found, err := fieldLiterals(strings.TrimSpace(string(out)), names)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for key, places := range found.literals {
		path, name, _ := strings.Cut(key, ": ")
		if path == "specs/provider_"+name+".go" {
			declared[name] = true
			continue
		}
		t.Errorf("%s spells provider %q as a literal (%s): read its declaration (specs.Providers) or ask its "+
			"implementation (llm.Implemented)", path, name, strings.Join(places, ", "))
	}
	for name := range names {
		if !declared[name] {
			t.Errorf("provider %q is not declared in specs/provider_%s.go", name, name)
		}
	}
}
