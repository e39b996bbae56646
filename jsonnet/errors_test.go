package jsonnet

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/specs"
)

// writeFiles writes files (name -> text) into a new temporary folder and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// header starts every bad spec, so that line numbers below count from 3.
const header = "local ctxlab = import 'ctxlab.libsonnet';\n" +
	"local ctx(activity) = ctxlab.step('context', activity, inputs={ checkout: 'checkout' });\n"

// good is a valid experiment body; cases replace a line of it.
func spec(lines ...string) string { return header + strings.Join(lines, "\n") + "\n" }

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		// want is each error line: "file:line:col: " or "file:line: " (file relative to the folder), then a part of
		// the message.
		want [][2]string
	}{
		{
			name: "syntax error",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({", // 3
				"  name: 'x',",
				"  models: [ctxlab.models.offline,,],", // 5
				"})")},
			want: [][2]string{{"spec.jsonnet:5:34: ", "Unexpected: \",\""}},
		},
		{
			name: "unknown variable",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: nmae,", // 4
				"})")},
			want: [][2]string{{"spec.jsonnet:4:9: ", "Unknown variable: nmae"}},
		},
		{
			name: "runtime error",
			files: map[string]string{"spec.jsonnet": spec(
				"local methods = [ctxlab.methods.no_source];",
				"ctxlab.experiment({", // 4
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  models: [ctxlab.models.offline],",
				"  methods: [methods[3]],", // 8
				"})")},
			want: [][2]string{{"spec.jsonnet:8:13: ", "out of bounds"}},
		},
		{
			name: "library function misused: placed at the call, not in the library",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  models: [ctxlab.models.offline],",
				"  methods: [ctxlab.method('m', ctxlab.step(7, 'no_source'))],", // 7
				"})")},
			want: [][2]string{{"spec.jsonnet:7:32: ", "ctxlab.step: id must be a string, got number"}},
		},
		{
			name: "error in spec",
			files: map[string]string{"spec.jsonnet": spec(
				"local model = ctxlab.ext('model', 'gemini');",
				"ctxlab.experiment({",
				"  name: 'x',",
				"  models: [",
				"    if model == 'offline' then ctxlab.models.offline",
				"    else error 'unknown model ' + model,", // 8
				"  ],",
				"})")},
			want: [][2]string{{"spec.jsonnet:8:10: ", "unknown model gemini"}},
		},
		{
			name: "error in an imported file",
			files: map[string]string{
				"spec.jsonnet": spec(
					"local mine = import 'lib/mine.libsonnet';",
					"ctxlab.experiment({ name: 'x', models: [mine.model] })"),
				"lib/mine.libsonnet": "{\n  model: error 'no model yet',\n}\n",
			},
			want: [][2]string{{"lib/mine.libsonnet:2:10: ", "no model yet"}},
		},
		{
			name: "bad import",
			files: map[string]string{"spec.jsonnet": spec(
				"local mine = import 'mine.libsonnet';", // 3
				"ctxlab.experiment(mine)")},
			want: [][2]string{{"spec.jsonnet:3:14: ", `couldn't open import "mine.libsonnet"`}},
		},
		{
			name: "syntax error in an imported file",
			files: map[string]string{
				"spec.jsonnet": spec(
					"local mine = import 'mine.libsonnet';",
					"ctxlab.experiment(mine)"),
				"mine.libsonnet": "{\n  name: 'x'\n  models: [],\n}\n",
			},
			want: [][2]string{{"mine.libsonnet:3:3: ", "Expected a comma before next field"}},
		},
		{
			name: "unknown activity",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  models: [ctxlab.models.offline],",
				"  methods: [",
				"    ctxlab.methods.no_source,",
				"    ctxlab.method('bm25', ctx('bm25_files')),", // 9
				"  ],",
				"})")},
			want: [][2]string{{"spec.jsonnet:9:31: ", `methods[1].steps[1].activity: unknown activity "bm25_files" ` +
				"(known: " + strings.Join(specs.ActivityNames(), ", ") + ")"}},
		},
		{
			name: "unknown activity in an imported file",
			files: map[string]string{
				"spec.jsonnet": spec(
					"local mine = import 'mine.libsonnet';",
					"ctxlab.experiment({ name: 'x', dataset: ctxlab.datasets.demo,",
					"  models: [ctxlab.models.offline], methods: [mine] })"),
				"mine.libsonnet": "local ctxlab = import 'ctxlab.libsonnet';\n" +
					"ctxlab.method('mine',\n" +
					"  { id: 'context', activity: 'bm25', inputs: { checkout: 'checkout' } })\n",
			},
			want: [][2]string{{"mine.libsonnet:3:30: ", `unknown activity "bm25"`}},
		},
		{
			name: "input naming a missing step",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  models: [ctxlab.models.offline],",
				"  methods: [ctxlab.method('m',",
				"    ctxlab.step('context', 'no_source', inputs={ checkout: 'chekout' }))],", // 8
				"})")},
			want: [][2]string{{"spec.jsonnet:8:60: ", `methods[0].steps[1].inputs.checkout: input checkout of step ` +
				`"context" names missing step "chekout" (steps: checkout, context, patch, measure, grade)`}},
		},
		{
			name: "cycle",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  models: [ctxlab.models.offline],",
				"  methods: [{ name: 'loop', steps: [",
				"    ctxlab.step('checkout', 'checkout'),",
				"    ctxlab.step('first', 'patch', inputs={ checkout: 'checkout', context: 'second' }),", // 9
				"    ctxlab.step('second', 'measure', inputs={ checkout: 'checkout', context: 'first' }),",
				"  ] }],",
				"})")},
			want: [][2]string{{"spec.jsonnet:9:17: ",
				`methods[0].steps[1]: method "loop": steps form a cycle: first -> second -> first`}},
		},
		{
			name: "duplicate method names: at the second",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  models: [ctxlab.models.offline],",
				"  methods: [",
				"    ctxlab.method('files', ctx('oracle_files')),", // 8
				"    ctxlab.method('files', ctx('no_source')),",    // 9
				"  ],",
				"})")},
			want: [][2]string{{"spec.jsonnet:9:19: ", `methods[1].name: duplicate method name "files"`}},
		},
		{
			name: "duplicate methods from the library: at the second use",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  models: [ctxlab.models.offline],",
				"  methods: [",
				"    ctxlab.methods.no_source,",
				"    ctxlab.methods.no_source,", // 9
				"  ],",
				"})")},
			want: [][2]string{{"spec.jsonnet:9:5: ", `methods[1].name: duplicate method name "no_source"`}},
		},
		{
			name: "empty method name: no literal to point at",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  models: [ctxlab.models.offline],",
				"  methods: [ctxlab.methods.no_source { name: '' }],",
				"})")},
			want: [][2]string{{"spec.jsonnet:1: ", `methods[0].name: method name is empty`}},
		},
		{
			name: "unknown field",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  models: [ctxlab.models.offline],",
				"  methods: [ctxlab.methods.no_source],",
				"  limits: { concurrency: 2, retires: 5 },", // 8
				"})")},
			want: [][2]string{{"spec.jsonnet:8:29: ", `limits.retires: unknown field "retires" (fields here: ` +
				"concurrency, providers, queues, retries, spend_usd)"}},
		},
		{
			name: "wrong type",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  models: [ctxlab.models.offline],",
				"  methods: [ctxlab.methods.no_source],",
				"  limits: { concurrency: 'four' },", // 8
				"})")},
			want: [][2]string{{"spec.jsonnet:8:26: ", `limits.concurrency: expected an integer, got string "four"`}},
		},
		{
			name: "bad duration",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  models: [ctxlab.models.offline],",
				"  methods: [ctxlab.methods.no_source],",
				"  grading: { timeout: '30 minutes' },", // 8
				"})")},
			want: [][2]string{{"spec.jsonnet:8:23: ", `grading.timeout: duration "30 minutes"`}},
		},
		{
			name: "missing model",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  models: [],", // 6
				"  methods: [ctxlab.methods.no_source],",
				"})")},
			want: [][2]string{{"spec.jsonnet:6:3: ", "models: no models: an experiment needs at least one"}},
		},
		{
			name: "missing models field: line 1",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'x',",
				"  dataset: ctxlab.datasets.demo,",
				"  methods: [ctxlab.methods.no_source],",
				"})")},
			want: [][2]string{{"spec.jsonnet:1: ", "models: no models"}},
		},
		{
			name:  "not an object",
			files: map[string]string{"spec.jsonnet": "[1, 2]\n"},
			want:  [][2]string{{"spec.jsonnet:1: ", "a spec must evaluate to an experiment object, got an array"}},
		},
		{
			name: "several problems, one line each",
			files: map[string]string{"spec.jsonnet": spec(
				"ctxlab.experiment({",
				"  name: 'my experiment',", // 4
				"  dataset: ctxlab.datasets.demo,",
				"  models: [ctxlab.models.offline + { provider: 'gemini' }],", // 6
				"  methods: [ctxlab.method('m', ctx('bm25'))],",               // 7
				"})")},
			want: [][2]string{
				{"spec.jsonnet:4:9: ", `name: experiment name "my experiment" must be a folder name`},
				{"spec.jsonnet:6:48: ", `models[0].provider: unknown provider "gemini"`},
				{"spec.jsonnet:7:36: ", `methods[0].steps[1].activity: unknown activity "bm25"`},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeFiles(t, c.files)
			path := filepath.Join(dir, "spec.jsonnet")
			e, err := Compile(path, Options{})
			if err == nil {
				t.Fatalf("compiled: %+v", e)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(c.want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(c.want), err)
			}
			for i, w := range c.want {
				prefix := filepath.Join(dir, w[0])
				if !strings.HasPrefix(lines[i], prefix) || !strings.Contains(lines[i], w[1]) {
					t.Errorf("line %d:\n got %s\nwant %s...%s", i, lines[i], prefix, w[1])
				}
			}
			var first *Error
			if !errors.As(err, &first) || first.Error() != lines[0] {
				t.Errorf("errors.As(*Error) = %v", first)
			}
			var many Errors
			if isMany := errors.As(err, &many); isMany != (len(c.want) > 1) {
				t.Errorf("Errors: %v, want it only for several problems", isMany)
			}
		})
	}
}

func TestCompileMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.jsonnet")
	_, err := Compile(path, Options{})
	var e *Error
	if !errors.As(err, &e) || e.File != path || e.Line != 0 || !strings.Contains(e.Msg, "nope.jsonnet") {
		t.Fatalf("err = %#v", err)
	}
	if want := path + ": "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%q does not start with %q", err, want)
	}
}

func TestErrorFormat(t *testing.T) {
	cases := []struct {
		e    *Error
		want string
	}{
		{&Error{File: "a.jsonnet", Line: 3, Col: 7, Msg: "boom"}, "a.jsonnet:3:7: boom"},
		{&Error{File: "a.jsonnet", Line: 3, Msg: "boom"}, "a.jsonnet:3: boom"},
		{&Error{File: "a.jsonnet", Msg: "boom"}, "a.jsonnet: boom"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	es := Errors{cases[0].e, cases[1].e}
	if got := es.Error(); got != "a.jsonnet:3:7: boom\na.jsonnet:3: boom" {
		t.Errorf("Errors = %q", got)
	}
	if got := oneLine("a\n  b\r\nc\n"); got != "a b c" {
		t.Errorf("oneLine = %q", got)
	}
}
