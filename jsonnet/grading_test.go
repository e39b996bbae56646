package jsonnet

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/specs"
)

// grading.test_cmd compiles from a string (as before) and from an object by language and repository, and the
// compiled JSON keeps the form the spec used.
func TestCompileGradingTestCmd(t *testing.T) {
	for _, c := range []struct {
		grading, wantJSON string
		want              specs.TestCommand
	}{
		{"{ test_cmd: 'pytest -x' }", `"test_cmd":"pytest -x"`, specs.TestCommand{All: "pytest -x"}},
		{"{ test_cmd: { python: 'python3 -m pytest -rA', 'acme/calc': 'tox' } }",
			`"test_cmd":{"acme/calc":"tox","python":"python3 -m pytest -rA"}`,
			specs.TestCommand{By: map[string]string{"python": "python3 -m pytest -rA", "acme/calc": "tox"}}},
		{"{ model_tests: 'keep', tests: 'listed' }", `"model_tests":"keep","tests":"listed",`, specs.TestCommand{}},
	} {
		dir := writeFiles(t, map[string]string{"spec.jsonnet": spec("ctxlab.experiment({", "  name: 'x',",
			"  dataset: ctxlab.datasets.demo,", "  models: [ctxlab.models.offline],",
			"  methods: [ctxlab.methods.no_source],", "  grading: "+c.grading+",", "})")})
		e, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.grading, err)
		}
		if c.want.All != e.Grading.TestCmd.All || len(c.want.By) != len(e.Grading.TestCmd.By) {
			t.Errorf("%s: test_cmd %+v", c.grading, e.Grading.TestCmd)
		}
		for k, v := range c.want.By {
			if e.Grading.TestCmd.By[k] != v {
				t.Errorf("%s: test_cmd[%s] = %q", c.grading, k, e.Grading.TestCmd.By[k])
			}
		}
		out, err := json.Marshal(e.Grading)
		if err != nil || !strings.Contains(string(out), c.wantJSON) {
			t.Errorf("%s: compiled grading %s, want it to hold %s", c.grading, out, c.wantJSON)
		}
	}
}

func TestCompileGradingErrors(t *testing.T) {
	for _, c := range []struct{ grading, want string }{
		{"{ model_tests: 'ignore' }", `grading.model_tests: unknown grading.model_tests "ignore" (known: drop, keep)`},
		{"{ tests: 'every' }", `grading.tests: unknown grading.tests "every"`},
		{"{ test_cmd: ['pytest'] }", "grading.test_cmd: test_cmd must be a string, or an object"},
		{"{ test_cmd: { rust: 'cargo test' } }", `grading.test_cmd.rust: test_cmd key "rust" is neither a language`},
	} {
		dir := writeFiles(t, map[string]string{"spec.jsonnet": spec("ctxlab.experiment({", "  name: 'x',",
			"  dataset: ctxlab.datasets.demo,", "  models: [ctxlab.models.offline],",
			"  methods: [ctxlab.methods.no_source],", "  grading: "+c.grading+",", "})")})
		_, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "spec.jsonnet:8") {
			t.Errorf("%s: %v, want spec.jsonnet:8 ... %s", c.grading, err, c.want)
		}
	}
}

// A spec that sets none of the grading options compiles with their defaults written out: grades made before they
// existed (model test files run, code unconfined) have another spec hash and are never reused.
func TestCompileGradingDefaultsExplicit(t *testing.T) {
	for grading, want := range map[string]string{
		"{}": `{"executor":"local","timeout":"30m0s","model_tests":"drop","tests":"files","isolation":"sandbox"}`,
		"{ test_cmd: 'pytest -x', isolation: 'none' }": `{"executor":"local","timeout":"30m0s","model_tests":"drop",` +
			`"tests":"files","isolation":"none","test_cmd":"pytest -x"}`,
	} {
		dir := writeFiles(t, map[string]string{"spec.jsonnet": spec("ctxlab.experiment({", "  name: 'x',",
			"  dataset: ctxlab.datasets.demo,", "  models: [ctxlab.models.offline],",
			"  methods: [ctxlab.methods.no_source],", "  grading: "+grading+",", "})")})
		e, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := json.Marshal(e.Grading); err != nil || string(out) != want {
			t.Errorf("%s compiled to %s, want %s", grading, out, want)
		}
	}
}
