package runlog

import (
	"context"
	"path/filepath"
	"testing"

	"ctxlab/runfolder"
	"ctxlab/store/objects"
)

// TestShippedRecordsAreGatheredOnce: records two workers ship reach the gatherer's file each once, whatever how
// often it gathers, from one process or two, and what a worker appends later follows.
func TestShippedRecordsAreGatheredOnce(t *testing.T) {
	ctx := context.Background()
	store := objects.Dir{Root: t.TempDir()}
	a, b := NewShipper(store, runfolder.AttemptsFile), NewShipper(store, runfolder.AttemptsFile)
	for i := range 3 {
		a.Append(Attempt{Instance: "a", Attempt: int32(i)})
		b.Append(Attempt{Instance: "b", Attempt: int32(i)})
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), runfolder.AttemptsFile)
	for range 2 {
		if _, err := Gather(ctx, store, local); err != nil {
			t.Fatal(err)
		}
	}
	count := func() map[string]int {
		recs, bad, err := Read[Attempt](local)
		if err != nil || bad > 0 {
			t.Fatal(err, bad)
		}
		n := map[string]int{}
		for _, r := range recs {
			n[r.Instance]++
		}
		return n
	}
	if n := count(); n["a"] != 3 || n["b"] != 3 {
		t.Fatalf("gathered %v, want 3 records of each worker", n)
	}
	a.Append(Attempt{Instance: "a", Attempt: 9})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := Gather(ctx, store, local); n != 1 || err != nil {
		t.Errorf("gathered %d new segments, %v; want the one written since", n, err)
	}
	if n := count(); n["a"] != 4 || n["b"] != 3 {
		t.Errorf("gathered %v after a later record", n)
	}
}
