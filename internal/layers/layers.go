// Package layers states ctxlab's package layering and checks it: a package imports only packages below it.
//
// Each ctxlab package belongs to one unit (a package path, or a folder written "dir/..." for it and everything
// under it), and each unit sits in one layer. Packages of the same unit may import each other (Go already forbids
// cycles); an import between two units must point to a strictly lower layer. The test in this package runs
// `go list` over the module and fails naming every import that points up or sideways, and every package that no
// unit covers, so a new package must be given its place here.
//
// Only the imports of a package's non-test files are checked. Tests may borrow fixtures from above (demobench's test
// grades the generated instances with grading/executor; activities/llm's test parses the demo's patches), and Go
// already rejects a test import that would close a cycle.
package layers

import (
	"fmt"
	"sort"
	"strings"
)

// Module is the module path every checked package starts with.
const Module = "ctxlab"

// Layer is one level of the stack: its units may import units of lower layers only.
type Layer struct {
	Name  string
	Units []string // package paths relative to Module; "dir/..." covers dir and every package under it
}

// Stack lists the layers from the bottom up.
var Stack = []Layer{
	{"tools", []string{"internal/..."}},          // leaf tools: flock, jsonl, lru, logs, images, cluster, listing, offlinetask
	{"run-folder layout", []string{"runfolder"}}, // the name of every file and folder of runs/NAME
	// errkind is the failure vocabulary (no imports) that rows, the workflows and the model clients share.
	{"spec model", []string{"specs", "activities/api/errkind"}},
	{"infrastructure", []string{"store/...", "dataset/...", "patch/...", "jsonnet"}},
	{"records and demo data", []string{"runlog", "demobench"}},
	{"results", []string{"results/..."}},
	// Grading one patch, stage by stage (package grading's doc): importable without package activities or Temporal.
	{"grading", []string{"grading/..."}},
	{"activity parts", []string{"activities/..."}}, // the pure sub-packages the steps are written over
	// The steps: plain functions, one per kind, importing no Temporal (TestStepsLinkNoTemporal).
	{"steps", []string{"activities/steps"}},
	{"activities and workflows", []string{"activities", "workflows"}}, // peers: workflows need only activities/api
	{"worker wiring", []string{"wiring"}},
	{"commands", []string{"starter/...", "worker"}},
	// Fakes, real-server harnesses and test-only packages: nothing but tests imports them.
	{"test kit", []string{"testkit/...", "docs"}},
}

// Package is what the check needs of one package: its import path and the import paths it imports.
type Package struct {
	ImportPath string
	Imports    []string
}

// placement is where a package sits: the unit that covers it and that unit's layer.
type placement struct {
	unit  string
	layer int
}

// place finds the unit covering pkg (a path relative to Module): an exact unit wins over a "dir/..." one, and a
// longer "dir/..." over a shorter one, so exceptions can be listed above the folder they sit in.
func place(pkg string) (placement, bool) {
	best, found, bestLen := placement{}, false, -1
	for layer, l := range Stack {
		for _, unit := range l.Units {
			dir, isTree := strings.CutSuffix(unit, "/...")
			var score int
			switch {
			case !isTree && pkg == unit:
				score = 1 << 20 // exact match beats any folder
			case isTree && (pkg == dir || strings.HasPrefix(pkg, dir+"/")):
				score = len(dir)
			default:
				continue
			}
			if score > bestLen {
				best, found, bestLen = placement{unit, layer}, true, score
			}
		}
	}
	return best, found
}

// Check returns one message per violation, sorted: a module package no unit covers, or an import of a module
// package that is not in the same unit and not in a lower layer. Imports outside Module are ignored.
func Check(pkgs []Package) []string {
	var problems []string
	for _, p := range pkgs {
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		from, ok := place(rel)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: no layer covers this package; add it to layers.Stack", p.ImportPath))
			continue
		}
		for _, imp := range p.Imports {
			relImp, ok := relative(imp)
			if !ok {
				continue
			}
			to, ok := place(relImp)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s imports %s, which no layer covers; add it to layers.Stack", p.ImportPath, imp))
				continue
			}
			if to.unit == from.unit || to.layer < from.layer {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s (layer %q) imports %s (layer %q), which is not below it",
				p.ImportPath, Stack[from.layer].Name, imp, Stack[to.layer].Name))
		}
	}
	sort.Strings(problems)
	return problems
}

// relative returns path relative to Module, and whether path is in Module at all.
func relative(path string) (string, bool) {
	if path == Module {
		return "", true
	}
	rel, ok := strings.CutPrefix(path, Module+"/")
	return rel, ok
}
