package activities

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/store/bucket"
)

// TestCallRecordsReachTheSharedStoreAtOnce: with a shared store, a model call's record is in the store when
// recording it returns, not FlushEvery later, so a worker killed with SIGKILL right after a paid call loses none of
// the ledger (attempt records may wait for the next flush).
func TestCallRecordsReachTheSharedStoreAtOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := &Activities{Runs: t.TempDir(), Log: zerolog.Nop(), StoreURL: "file://" + dir}
	defer a.Close()
	ctx := context.Background()
	objs, err := bucket.OpenObjects(ctx, a.StoreURL, "r", "unused")
	if err != nil {
		t.Fatal(err)
	}
	if err := objs.Put(ctx, runfolder.RunMarkerKey, []byte(`{"run":"r"}`)); err != nil {
		t.Fatal(err)
	}
	if err := a.record("r", runfolder.CallsFile, runlog.Call{Instance: "i", Step: "patch", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	segments, err := objs.List(ctx, runlog.SegmentsKey(runfolder.CallsFile)+"/", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(segments) != 1 {
		t.Fatalf("%d segments of calls in the store right after the call was recorded, want 1: %v", len(segments),
			segments)
	}
	got := filepath.Join(t.TempDir(), runfolder.CallsFile)
	if _, err := runlog.Gather(ctx, objs, got); err != nil {
		t.Fatal(err)
	}
	calls, _, err := runlog.Read[runlog.Call](got)
	if err != nil || len(calls) != 1 || calls[0].Key != "k" {
		t.Errorf("gathered calls %+v, %v; want the one recorded", calls, err)
	}
}
