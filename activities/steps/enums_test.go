package steps

import (
	"slices"
	"testing"

	"ctxlab/activities/chunk"
	"ctxlab/activities/contexts"
	"ctxlab/activities/corrupt"
	"ctxlab/activities/llm/offline"
	"ctxlab/activities/rankings"
	"ctxlab/activities/search"
	"ctxlab/specs"
)

// TestDeclaredValuesAreImplemented: every value a params field declares is one the packages under the steps
// implement, and every unit package chunk cuts is declared, so that a value the compiler accepts never fails the
// step.
func TestDeclaredValuesAreImplemented(t *testing.T) {
	var units []string
	for _, u := range specs.RetrieveUnit("").Values() {
		if _, err := rankings.ChunkUnit(specs.RetrieveUnit(u)); err != nil {
			t.Errorf("unit %s: %v", u, err)
		}
		units = append(units, u)
	}
	for _, u := range chunk.Units {
		if !slices.Contains(units, string(u)) {
			t.Errorf("package chunk's unit %s is not a declared retrieve unit", u)
		}
	}
	c := contexts.Context{Blocks: []contexts.Block{{Path: "a.go", Start: 1, Text: "package a\nfunc f() {}\n"}}}
	for _, m := range []specs.CorruptMode{specs.CorruptTokens, specs.CorruptLines} {
		if _, _, err := corrupt.Apply(c, corrupt.Options{Mode: string(m), Rate: 0.5}); err != nil {
			t.Errorf("mode %s: %v", m, err)
		}
	}
	for _, f := range specs.EditFormat("").Values() {
		if _, err := offline.FormatPatch("", f); err != nil {
			t.Errorf("edit format %s: %v", f, err)
		}
	}
}

// TestDefaultsAgreeWithPackages: the params defaults kept in specs name the same values as the packages that use
// them (specs cannot import those packages).
func TestDefaultsAgreeWithPackages(t *testing.T) {
	if specs.EvidenceDefaults.Window != search.DefaultWindow {
		t.Errorf("evidence window default %d, search.DefaultWindow %d", specs.EvidenceDefaults.Window, search.DefaultWindow)
	}
	if specs.PatchDefaults.Format != offline.FormatDiff {
		t.Errorf("patch format default %q, want %q", specs.PatchDefaults.Format, offline.FormatDiff)
	}
}
