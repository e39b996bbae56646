package steps

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"ctxlab/activities/api"
	"ctxlab/activities/contexts"
	"ctxlab/patch/diff"
	"ctxlab/store/cas"
	"ctxlab/testkit/demorun"
)

// flakyStore fails the first Get of one blob, as a network store does on a dropped connection.
type flakyStore struct {
	cas.Store
	mu    sync.Mutex
	blob  cas.Ref
	fails int
}

func (s *flakyStore) Get(ctx context.Context, ref cas.Ref) ([]byte, error) {
	s.mu.Lock()
	fail := ref == s.blob && s.fails > 0
	if fail {
		s.fails--
	}
	s.mu.Unlock()
	if fail {
		return nil, errors.New("read tcp 10.0.0.2:443: connection reset by peer")
	}
	return s.Store.Get(ctx, ref)
}

// TestSnapshotReadErrorFailsAttempt: a transient content-store error while reading a selected file fails the
// attempt (retryable, nothing memoized) instead of leaving the file out of a context that is then memoized for
// good; the retry shows the file.
func TestSnapshotReadErrorFailsAttempt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	store := f.Store
	m := f.Manifest(co)
	gold, err := diff.ChangedFiles(f.Rows[demorun.Instance].Patch)
	if err != nil || len(gold) == 0 {
		t.Fatalf("gold files %v, %v", gold, err)
	}
	entry, ok := m.Lookup(gold[0])
	if !ok {
		t.Fatalf("%s not in the snapshot", gold[0])
	}
	selRef, err := cas.PutJSON(ctx, store, Selection{Files: gold})
	if err != nil {
		t.Fatal(err)
	}
	flaky := &flakyStore{Store: store, blob: entry.Blob, fails: 1}
	f.Store = flaky

	inputs := map[string]api.NodeOutput{"checkout": co, "files": {Ref: selRef}}
	_, err = f.Node("assemble", demorun.Instance, nil, inputs)
	if err == nil {
		t.Fatal("assemble succeeded although reading " + gold[0] + " failed")
	}
	if isPermanent(err) || !strings.Contains(err.Error(), "connection reset") || !strings.Contains(err.Error(), gold[0]) {
		t.Errorf("err = %v; want a retryable error naming %s and the cause", err, gold[0])
	}
	out := f.Must(f.Node("assemble", demorun.Instance, nil, inputs)) // the retry
	var c contexts.Context
	if err := cas.GetJSON(ctx, store, out.Ref, &c); err != nil {
		t.Fatal(err)
	}
	shown := false
	for _, b := range c.Blocks {
		shown = shown || b.Path == gold[0]
	}
	if !shown {
		t.Errorf("the retried context lacks %s: %v", gold[0], c.Files())
	}
}

// TestPatchCheckReadErrorFailsAttempt: measure's check that the patch applies reads the files it edits; a store
// failure there fails the attempt instead of recording a patch that applies as one that does not.
func TestPatchCheckReadErrorFailsAttempt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	none := f.Must(f.Node("no_source", demorun.Instance, nil, map[string]api.NodeOutput{"checkout": co}))
	store := f.Store
	m := f.Manifest(co)
	gold, err := diff.ChangedFiles(f.Rows[demorun.Instance].Patch)
	if err != nil || len(gold) == 0 {
		t.Fatalf("gold files %v, %v", gold, err)
	}
	entry, _ := m.Lookup(gold[0])
	patchRef, err := store.Put(ctx, []byte(f.Rows[demorun.Instance].Patch))
	if err != nil {
		t.Fatal(err)
	}
	f.Store = &flakyStore{Store: store, blob: entry.Blob, fails: 1}

	inputs := map[string]api.NodeOutput{"checkout": co, "context": none, "patch": {Ref: patchRef}}
	tok := map[string]any{"tokenizer": "o200k_base"}
	if out, err := f.Node("measure", demorun.Instance, tok, inputs); err == nil || isPermanent(err) {
		t.Fatalf("measure = %v, %v; want a retryable failure", out.Row, err)
	}
	out := f.Must(f.Node("measure", demorun.Instance, tok, inputs))
	if out.Row["patch_applied"] != true {
		t.Errorf("the gold patch should apply on the retry: %v", out.Row)
	}
}
