package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"ctxlab/testkit/e2e"
)

// The helpers the unit tests of starter/cli share; starter/e2e, where the end-to-end tests are, has its own.

// demoSpec is the path of specs/demo.jsonnet.
func demoSpec(t *testing.T) string { return filepath.Join(e2e.RepoRoot(t), "specs", "demo.jsonnet") }

// referenceMethods keeps only the demo's two reference methods (no_source, oracle_files), which keeps a test quick,
// and hides the demo's budget anchor (cq2care), which they leave out.
const referenceMethods = "methods: super.methods[0:2], anchor:: null"

// demoVariant writes a spec that is the demo spec with overrides (a Jsonnet object) applied, and returns its path.
func demoVariant(t *testing.T, overrides string) string {
	t.Helper()
	return e2e.DemoVariant(t, filepath.Join(t.TempDir(), "variant.jsonnet"), overrides)
}

// mainOut runs a starter command in this process (status and audit need no server).
func mainOut(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main(args, &out, &errb); code != 0 {
		t.Fatalf("starter %v: exit %d\n%s", args, code, errb.String())
	}
	return out.String(), errb.String()
}

// runMain runs the starter in this process and returns its exit code, stdout and stderr.
func runMain(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// writeUnder writes text to dir/name, making its folders, and returns the path.
func writeUnder(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
