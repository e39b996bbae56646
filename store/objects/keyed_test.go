package objects_test

import (
	"context"
	"testing"

	"ctxlab/store/objects"
)

// TestKeyedCreate: the first value stored under a key is what every later Create gets back; a stored value that
// does not decode, or that the caller's check refuses (a damaged or hostile file), is replaced instead of trusted.
func TestKeyedCreate(t *testing.T) {
	ctx := context.Background()
	k := objects.Keyed{S: objects.Dir{Root: t.TempDir()}, Prefix: "memo"}
	type entry struct{ N int }
	positive := func(stored any) bool { return stored.(*entry).N > 0 }
	first := entry{N: 1}
	if created, err := k.Create(ctx, "abcd", &first, positive); !created || err != nil {
		t.Fatalf("first create: %v, %v", created, err)
	}
	second := entry{N: 2}
	if created, err := k.Create(ctx, "abcd", &second, positive); created || err != nil || second.N != 1 {
		t.Errorf("second create: created %v, %v, value %+v; want the first's", created, err, second)
	}
	for name, raw := range map[string]string{"undecodable": "{not json", "refused": `{"N": -5}`} {
		if err := k.S.Put(ctx, "memo/ab/abcd.json", []byte(raw)); err != nil {
			t.Fatal(err)
		}
		v := entry{N: 3}
		if created, err := k.Create(ctx, "abcd", &v, positive); !created || err != nil || v.N != 3 {
			t.Errorf("%s value stored: created %v, %v, value %+v; want it replaced by ours", name, created, err, v)
		}
		var back entry
		if !k.Get(ctx, "abcd", &back) || back.N != 3 {
			t.Errorf("%s value stored: after Create it reads %+v", name, back)
		}
	}
}
