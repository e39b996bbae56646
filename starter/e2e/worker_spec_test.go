package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The worker's --spec is read as starter run reads it: -J and $JSONNET_PATH find its imports, --ext-str and
// --ext-code set its variables. A spec the worker cannot compile stops it before it dials; one it can compile gets
// it as far as dialing (an address nothing listens on).
func TestWorkerSpecTakesJsonnetFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return writeUnder(t, dir, name, text) }
	spec := write("spec/spec.jsonnet", `local ctxlab = import 'ctxlab.libsonnet';
local lib = import 'naming.libsonnet';
ctxlab.experiment({
  name: lib.prefix + '-' + std.extVar('suffix'),
  dataset: ctxlab.datasets.swebench('d.jsonl'),
  models: [ctxlab.models.offline],
  methods: [ctxlab.methods.no_source],
  limits: { concurrency: std.extVar('n') },
})
`)
	lib := filepath.Dir(write("lib/naming.libsonnet", "{ prefix: 'w' }"))
	worker := buildWorker(t)
	runWorker := func(env []string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := workerCmd(ctx, worker, append([]string{"--address", "127.0.0.1:1", "--queues", "cpu", "--spec", spec},
			args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("worker %q ran against an address nothing listens on:\n%s", args, out)
		}
		return string(out)
	}
	const dialed = "worker: cannot reach Temporal at 127.0.0.1:1"
	vars := []string{"--ext-str", "suffix=x", "--ext-code", "n=2"}
	if out := runWorker([]string{"JSONNET_PATH="}, vars...); !strings.Contains(out, "naming.libsonnet") ||
		strings.Contains(out, dialed) {
		t.Errorf("without a library folder the spec's import should fail before dialing:\n%s", out)
	}
	if out := runWorker([]string{"JSONNET_PATH="}, append([]string{"-J", lib}, vars...)...); !strings.Contains(out, dialed) {
		t.Errorf("-J: the spec did not compile:\n%s", out)
	}
	if out := runWorker([]string{"JSONNET_PATH=" + lib}, vars...); !strings.Contains(out, dialed) {
		t.Errorf("JSONNET_PATH: the spec did not compile:\n%s", out)
	}
	if out := runWorker([]string{"JSONNET_PATH=" + lib}, "--ext-str", "suffix=x"); !strings.Contains(out, "external variable: n") ||
		strings.Contains(out, dialed) {
		t.Errorf("without --ext-code n the spec should fail before dialing:\n%s", out)
	}
}
