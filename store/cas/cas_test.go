package cas

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPutGetRoundTripAndDedup(t *testing.T) {
	ctx := context.Background()
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r1, err := d.Put(ctx, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := d.Put(ctx, []byte("hello"))
	if r1 != r2 || !r1.Valid() || !strings.HasPrefix(string(r1), "sha256:") {
		t.Fatalf("refs %q %q", r1, r2)
	}
	if r1 != RefOf([]byte("hello")) {
		t.Errorf("ref %s is not the hash of the bytes", r1)
	}
	got, err := d.Get(ctx, r1)
	if err != nil || string(got) != "hello" {
		t.Fatalf("get = %q, %v", got, err)
	}
	if ok, _ := d.Has(ctx, r1); !ok {
		t.Error("Has = false for a stored blob")
	}
}

func TestGetRejectsCorruptAndMissing(t *testing.T) {
	ctx := context.Background()
	d, _ := NewDir(t.TempDir())
	r, _ := d.Put(ctx, []byte("payload"))
	h := strings.TrimPrefix(string(r), "sha256:")
	if err := os.WriteFile(filepath.Join(d.Root(), h[:2], h[2:]), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, r); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt blob read without error: %v", err)
	}
	if _, err := d.Get(ctx, RefOf([]byte("never stored"))); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing blob: %v, want ErrNotFound", err)
	}
	if _, err := d.Get(ctx, Ref("sha256:../../etc/passwd")); err == nil {
		t.Error("malformed reference accepted")
	}
}

func TestJSONHelpers(t *testing.T) {
	ctx := context.Background()
	d, _ := NewDir(t.TempDir())
	type v struct{ A int }
	r, err := PutJSON(ctx, d, v{A: 7})
	if err != nil {
		t.Fatal(err)
	}
	var out v
	if err := GetJSON(ctx, d, r, &out); err != nil || out.A != 7 {
		t.Fatalf("got %+v, %v", out, err)
	}
}
