package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/specs"
	"ctxlab/testkit/e2e"
)

// TestFormerDefaultTokenizerResumeHint: a sweep interrupted before the experiment's default tokenizer became 'model'
// (every model counted in o200k_base) is recorded under the spec hash of its pinned o200k_base plan. After the
// upgrade, the same spec text resolves a model that names its own tokenizer (here cl100k_base) to that tokenizer,
// so its hash differs and the starter refuses it as another spec. The refusal must say what resumes the sweep as it
// was started, and only when that reproduces the recorded hash: then the spec with the pin resumes it.
//
// The run folder is recorded under the old default by pinning o200k_base explicitly: the plan (and so the spec
// hash) of a spec that pins the former default is the plan the old default gave it.
func TestFormerDefaultTokenizerResumeHint(t *testing.T) {
	t.Parallel()
	base := "{ name: 'upgrade', dataset+: { limit: 2 }, " + referenceMethods +
		", models: [{ name: 'offline', provider: 'offline', tokenizer: 'cl100k_base' }]" +
		", debug: { slow_activities: '300ms' } }"
	pinned := demoVariant(t, base+" + { tokenizer: 'o200k_base' }")
	upgraded := demoVariant(t, base)
	edited := demoVariant(t, base+" + { methods: [super.methods[0]] }")
	runs := t.TempDir()
	dir := filepath.Join(runs, "upgrade")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e2e.KillWhen(t, starter(ctx, t, "run", pinned, "--runs", runs, "--quiet"), "the sweep never started working",
		5*time.Minute, 50*time.Millisecond, func() bool {
			b, err := os.ReadFile(filepath.Join(dir, "attempts.jsonl"))
			return err == nil && len(b) > 0
		})
	if n := e2e.RowCount(filepath.Join(dir, "results.jsonl")); n >= 4 {
		t.Fatalf("the kill came too late: %d rows written", n)
	}

	const hint = "add tokenizer: 'o200k_base' to the experiment to resume this sweep as it was started"
	_, stderr, code := runStarter(t, 5*time.Minute, "run", upgraded, "--runs", runs, "--quiet")
	if code != exitUsage || !strings.Contains(stderr, "is running from another spec") || !strings.Contains(stderr, hint) {
		t.Errorf("the upgraded spec: exit %d, want %d with the refusal and the hint %q; stderr:\n%s", code, exitUsage,
			hint, stderr)
	}
	// Another change besides the default: the pin does not reproduce the recorded hash, so no hint.
	_, stderr, code = runStarter(t, 5*time.Minute, "run", edited, "--runs", runs, "--quiet")
	if code != exitUsage || strings.Contains(stderr, "add tokenizer") {
		t.Errorf("an edited spec: exit %d, want %d without the hint; stderr:\n%s", code, exitUsage, stderr)
	}
	// Following the hint resumes the interrupted sweep.
	if _, stderr, code := runStarter(t, 10*time.Minute, "run", pinned, "--runs", runs, "--quiet"); code != 0 {
		t.Fatalf("the pinned spec: exit %d\n%s", code, stderr)
	}
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	if len(rows) != 4 {
		t.Errorf("the resumed sweep has %d rows, want 2 instances x 2 methods: %v", len(rows), keys(rows))
	}
	for k, r := range rows {
		if r[specs.Tokenizer.Name] != "o200k_base" {
			t.Errorf("%v counted in %v, want o200k_base as the sweep was started", k, r[specs.Tokenizer.Name])
		}
	}
	// The finished sweep is not replaced by the upgraded spec either: the spec text did not change, and running it
	// would pay for the budget-dependent steps again.
	_, stderr, code = runStarter(t, 5*time.Minute, "run", upgraded, "--runs", runs, "--quiet")
	if code != exitUsage || !strings.Contains(stderr, "add tokenizer: 'o200k_base' to the experiment to keep the finished sweep") {
		t.Errorf("the upgraded spec after the sweep finished: exit %d, want %d with the pin to keep it; stderr:\n%s",
			code, exitUsage, stderr)
	}
	if again := readRows(t, filepath.Join(dir, "results.jsonl")); len(again) != 4 {
		t.Errorf("the refused run left %d rows, want the finished sweep's 4", len(again))
	}
	if _, err := os.Stat(filepath.Join(dir, "previous")); !os.IsNotExist(err) {
		t.Errorf("the refused run put the finished sweep's rows aside (previous/: %v)", err)
	}
}
