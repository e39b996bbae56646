package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ctxlab/jsonnet"
	"ctxlab/starter/exitcode"
)

func TestParseSpecFlags(t *testing.T) {
	args := []string{"s.jsonnet", "-J", "lib1", "--jpath", "lib2", "--ext-str", "a=1", "--ext-str-file", "b=b.txt",
		"--ext-code", "c=1 + 1", "--tla-str", "d=x", "--tla-code", "e={ k: 1 }"}
	check := func(cmd string, sf jsonnet.Flags) {
		t.Helper()
		if !slices.Equal(sf.JPath, []string{"lib1", "lib2"}) || sf.ExtStr["a"] != "1" || sf.ExtStrFile["b"] != "b.txt" ||
			sf.ExtCode["c"] != "1 + 1" || sf.TLAStr["d"] != "x" || sf.TLACode["e"] != "{ k: 1 }" {
			t.Errorf("%s parsed %+v", cmd, sf)
		}
	}
	var stderr bytes.Buffer
	ro, err := parseRun(append([]string{"--runs", "out"}, args...), &stderr)
	if err != nil || ro.Spec != "s.jsonnet" || ro.Runs != "out" {
		t.Fatalf("run: %v %+v", err, ro)
	}
	check("run", ro.Flags)
	co, err := parseCompile(args, &stderr)
	if err != nil || co.spec != "s.jsonnet" {
		t.Fatalf("compile: %v %+v", err, co)
	}
	check("compile", co.Flags)
	for _, bad := range []string{"--ext-code", "--ext-str-file", "--tla-code"} {
		if _, err := parseCompile([]string{bad, "novalue", "s.jsonnet"}, &stderr); err == nil {
			t.Errorf("%s without = accepted", bad)
		}
	}
}

// TestCompileWithImporterFlags drives `starter compile` with each of the jsonnet tool's conventions and checks that
// the compiled experiment carries what each one supplied.
func TestCompileWithImporterFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return writeUnder(t, dir, name, text) }
	spec := write("spec/spec.jsonnet", `local ctxlab = import 'ctxlab.libsonnet';
local lib = import 'naming.libsonnet';
ctxlab.experiment({
  name: lib.prefix + '-' + std.extVar('suffix') + '-' + ctxlab.ext('tag', 'none'),
  dataset: ctxlab.datasets.swebench('d.jsonl'),
  models: [ctxlab.models.offline],
  methods: [ctxlab.methods.no_source],
  limits: { concurrency: std.extVar('n') },
})
`)
	write("flaglib/naming.libsonnet", "{ prefix: 'flag' }")
	write("envlib/naming.libsonnet", "{ prefix: 'env' }")
	suffix := write("suffix.txt", "fromfile")

	compileName := func(args ...string) (string, int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := Main(append([]string{"compile", spec}, args...), &out, &errb)
		if code != 0 {
			return "", code, errb.String()
		}
		var c compiled
		if err := json.Unmarshal(out.Bytes(), &c); err != nil {
			t.Fatalf("compile output is not JSON: %v", err)
		}
		if c.Experiment.Limits.Concurrency != 3 {
			t.Errorf("--ext-code n: concurrency %d, want 3", c.Experiment.Limits.Concurrency)
		}
		return c.Experiment.Name, code, errb.String()
	}

	t.Setenv("JSONNET_PATH", "")
	common := []string{"--ext-str-file", "suffix=" + suffix, "--ext-code", "n=1 + 2"}
	if name, code, errs := compileName(append(common, "-J", filepath.Join(dir, "flaglib"))...); name != "flag-fromfile-none" {
		t.Errorf("-J: name %q (exit %d: %s)", name, code, errs)
	}
	if name, code, errs := compileName(append(common, "--ext-code", "tag='t' + 'x'",
		"--jpath", filepath.Join(dir, "flaglib"))...); name != "flag-fromfile-tx" {
		t.Errorf("--jpath, --ext-code read by ctxlab.ext: name %q (exit %d: %s)", name, code, errs)
	}

	t.Setenv("JSONNET_PATH", filepath.Join(dir, "envlib"))
	if name, code, errs := compileName(common...); name != "env-fromfile-none" {
		t.Errorf("JSONNET_PATH: name %q (exit %d: %s)", name, code, errs)
	}
	if name, code, errs := compileName(append(common, "-J", filepath.Join(dir, "flaglib"))...); name != "flag-fromfile-none" {
		t.Errorf("-J before JSONNET_PATH: name %q (exit %d: %s)", name, code, errs)
	}

	// Without a library folder the import fails, naming the spec's line: a spec error, exit 2.
	t.Setenv("JSONNET_PATH", "")
	_, code, errs := compileName(common...)
	if code != exitcode.Usage || !strings.Contains(errs, spec+":2:") || !strings.Contains(errs, "naming.libsonnet") {
		t.Errorf("no library folder: exit %d, stderr %q", code, errs)
	}
	// An unreadable --ext-str-file is a spec error naming the variable and the file.
	_, code, errs = compileName("--ext-str-file", "suffix="+filepath.Join(dir, "nope.txt"), "--ext-code", "n=3")
	if code != exitcode.Usage || !strings.Contains(errs, "ext-str-file suffix") || !strings.Contains(errs, "nope.txt") {
		t.Errorf("missing --ext-str-file: exit %d, stderr %q", code, errs)
	}
}

// TestSpecFlagsInHelp keeps the flags' names in each spec-reading command's help, which the docs promise.
func TestSpecFlagsInHelp(t *testing.T) {
	for _, cmd := range [][]string{{"run"}, {"compile"}, {"images", "build"}} {
		var out, errb bytes.Buffer
		if code := Main(append(slices.Clone(cmd), "-h"), &out, &errb); code != 0 {
			t.Fatalf("%v -h: exit %d", cmd, code)
		}
		help := out.String() + errb.String()
		for _, f := range []string{"-J, --jpath DIR", "--ext-str K=V", "--ext-str-file K=FILE", "--ext-code K=CODE",
			"--tla-str K=V", "--tla-code K=CODE"} {
			if !strings.Contains(help, f) {
				t.Errorf("%v -h does not list %s", cmd, f)
			}
		}
	}
}

func TestCompileLib(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"compile", "--lib"}, &out, &errb); code != 0 {
		t.Fatalf("compile --lib: exit %d: %s", code, errb.String())
	}
	if out.String() != jsonnet.Library() || !strings.Contains(out.String(), "experiment(cfg)") {
		t.Errorf("compile --lib printed %d bytes, not the embedded library", out.Len())
	}
	if code := Main([]string{"compile", "--lib", "s.jsonnet"}, &out, &errb); code != exitcode.Usage {
		t.Errorf("compile --lib with a spec: exit %d", code)
	}
}

// TestCompileShowsSharedRankings: compile lists each BM25 ranking once with every retrieve step that reads it; the
// demo's ten retrieve nodes read five rankings (the function unit's by its four budgets, the file and SWE-bench
// units' by two methods each), and the paper's two models read the same rankings.
func TestCompileShowsSharedRankings(t *testing.T) {
	rankingsOf := func(spec string, args ...string) compiled {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main(append([]string{"compile", filepath.Join("..", "..", "specs", spec)}, args...), &out,
			&errb); code != 0 {
			t.Fatalf("compile %s: exit %d: %s", spec, code, errb.String())
		}
		var c compiled
		if err := json.Unmarshal(out.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	demo := rankingsOf("demo.jsonnet")
	readers := map[string][]string{}
	nodes := 0
	for _, r := range demo.Rankings {
		if _, dup := readers[string(r.Unit)]; dup {
			t.Errorf("unit %s listed twice", r.Unit)
		}
		readers[string(r.Unit)] = r.Steps
		nodes += len(r.Nodes)
	}
	retrieves := 0
	for _, n := range demo.Nodes {
		if n.Activity == "retrieve" {
			retrieves++
		}
	}
	if len(demo.Rankings) != 5 || nodes != retrieves {
		t.Errorf("demo: %d rankings over %d of its %d retrieve nodes; want 5 over all", len(demo.Rankings), nodes,
			retrieves)
	}
	for unit, want := range map[string][]string{
		"function": {"bm25_function.context", "bm25_function_x0_25.context", "bm25_function_x0_5.context",
			"bm25_function_x2.context"},
		"swebench_file": {"bm25_swebench.context", "fake_compressor.source"},
		"file":          {"bm25_file.context", "whole_files_bm25.context"},
	} {
		for _, step := range want {
			if !slices.Contains(readers[unit], step) {
				t.Errorf("demo: the %s ranking's readers %v lack %s", unit, readers[unit], step)
			}
		}
	}

	paper := rankingsOf("paper.jsonnet", "--ext-str", "gpt=g", "--ext-str", "claude=c")
	for _, r := range paper.Rankings {
		if r.Unit == "function" && (!slices.Contains(r.Steps, "g/bm25_function_x2.context") ||
			!slices.Contains(r.Steps, "c/bm25_function.context") || slices.ContainsFunc(r.Steps, func(s string) bool {
			return strings.Contains(s, "dense")
		})) {
			t.Errorf("paper: the function ranking's readers %v; want both models' BM25 steps, no dense one", r.Steps)
		}
	}
	if len(paper.Rankings) != 5 {
		t.Errorf("paper: %d rankings, want 5", len(paper.Rankings))
	}
}
