package cli

import (
	"bytes"
	"ctxlab/starter/exitcode"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRunFlagsAnywhere(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseRun([]string{"--runs", "out", "s.jsonnet", "--ext-str", "model=openai", "--tla-str", "n=3",
		"--address", "h:1"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.Spec != "s.jsonnet" || o.Runs != "out" || o.Cluster.Address != "h:1" || o.ExtStr["model"] != "openai" || o.TLAStr["n"] != "3" {
		t.Errorf("parsed %+v", o)
	}
	if _, err := parseRun([]string{"a.jsonnet", "b.jsonnet"}, &stderr); err == nil {
		t.Error("two specs accepted")
	}
	if _, err := parseRun([]string{"--ext-str", "novalue", "a.jsonnet"}, &stderr); err == nil {
		t.Error("--ext-str without = accepted")
	}
}

func TestCompilePrintsSharedNodes(t *testing.T) {
	var out, errb bytes.Buffer
	// The demo's two reference methods; the baselines after them share more nodes (jsonnet's tests check them).
	code := Main([]string{"compile", demoVariant(t, "{ "+referenceMethods+" }")}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var c compiled
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatalf("compile output is not JSON: %v\n%s", err, out.String())
	}
	if len(c.Methods) != 2 {
		t.Fatalf("methods = %d", len(c.Methods))
	}
	checkout := func(m compiledMethod) string {
		for _, s := range m.Steps {
			if s.ID == "checkout" {
				return s.Node
			}
		}
		return ""
	}
	if a, b := checkout(c.Methods[0]), checkout(c.Methods[1]); a == "" || a != b {
		t.Errorf("checkout nodes %q and %q: both methods should share one", a, b)
	}
	if want := 2*5 - 1; len(c.Nodes) != want {
		t.Errorf("nodes = %d, want %d (two 5-step methods sharing checkout)", len(c.Nodes), want)
	}
}

// Bad specs and datasets stop the run before any server starts, with one line naming the file and line.
func TestRunFailsFastOnBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return writeUnder(t, dir, name, text) }
	goodRow := `{"instance_id":"o__r-1","repo":"o/r","base_commit":"abc","problem_statement":"p","patch":"d","test_patch":"t","FAIL_TO_PASS":["TestA"],"PASS_TO_PASS":[]}`
	badRow := `{"instance_id":"o__r-2","repo":"o/r","problem_statement":"p","patch":"d","test_patch":"t","FAIL_TO_PASS":["TestA"]}`
	write("rows.jsonl", goodRow+"\n"+badRow+"\n")
	specNamed := func(file, name, methods string) string {
		return write(file, `local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({
  name: '`+name+`',
  dataset: ctxlab.datasets.swebench('rows.jsonl'),
  models: [ctxlab.models.offline],
  methods: `+methods+`,
})
`)
	}
	spec := func(file, methods string) string { return specNamed(file, "bad", methods) }
	cases := []struct {
		name, path, want string
	}{
		{"unknown activity", spec("a.jsonnet", `[ctxlab.method('m', ctxlab.step('context', 'telepathy'))]`),
			"a.jsonnet:6:"},
		{"syntax", write("s.jsonnet", "{ name: 'x', "), "s.jsonnet:1:"},
		{"bad dataset row", spec("d.jsonnet", `[ctxlab.methods.no_source]`),
			"rows.jsonl:2 (instance o__r-2): row lacks required fields: base_commit"},
		// A name too long for a folder failed later, creating it (exit 1).
		{"name too long", specNamed("n.jsonnet", strings.Repeat("n", 300), `[ctxlab.methods.no_source]`),
			"300 characters long; at most 128"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main([]string{"run", tc.path, "--runs", filepath.Join(dir, "runs")}, &out, &errb)
			if code != exitcode.Usage {
				t.Errorf("exit %d, want %d", code, exitcode.Usage)
			}
			msg := strings.TrimSpace(errb.String())
			if !strings.Contains(msg, tc.want) {
				t.Errorf("stderr %q, want it to name %q", msg, tc.want)
			}
			if strings.Count(msg, "\n") > 0 {
				t.Errorf("error is not one line: %q", msg)
			}
			if _, err := os.Stat(filepath.Join(dir, "runs", "bad", "temporal.db")); err == nil {
				t.Error("a server was started for a spec that cannot run")
			}
		})
	}
}
