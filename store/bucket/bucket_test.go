package bucket

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"gocloud.dev/blob"

	"ctxlab/store/cas"
	"ctxlab/store/objects"
	"ctxlab/store/objects/objectstest"
)

// exercise checks what every backend must do: round trip, write once, missing blobs, JSON.
func exercise(t *testing.T, s cas.Store) {
	t.Helper()
	ctx := context.Background()
	data := []byte("the context of instance acme__humanize-1")
	r, err := s.Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if r != cas.RefOf(data) {
		t.Errorf("ref %s, want %s", r, cas.RefOf(data))
	}
	if r2, err := s.Put(ctx, data); err != nil || r2 != r {
		t.Errorf("second put: %s, %v", r2, err)
	}
	got, err := s.Get(ctx, r)
	if err != nil || string(got) != string(data) {
		t.Errorf("get: %q, %v", got, err)
	}
	if ok, err := s.Has(ctx, r); !ok || err != nil {
		t.Errorf("has: %v, %v", ok, err)
	}
	missing := cas.RefOf([]byte("never stored"))
	if ok, err := s.Has(ctx, missing); ok || err != nil {
		t.Errorf("has missing: %v, %v", ok, err)
	}
	if _, err := s.Get(ctx, missing); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("get missing: %v, want cas.ErrNotFound", err)
	}
	if _, err := s.Get(ctx, cas.Ref("sha256:xyz")); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("malformed ref: %v", err)
	}
	type row struct{ A, B string }
	jr, err := cas.PutJSON(ctx, s, row{"x", "y"})
	if err != nil {
		t.Fatal(err)
	}
	var back row
	if err := cas.GetJSON(ctx, s, jr, &back); err != nil || back != (row{"x", "y"}) {
		t.Errorf("json: %+v, %v", back, err)
	}
}

func TestFileBucket(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := OpenURL(ctx, "file://"+filepath.ToSlash(dir), "demo")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exercise(t, s)

	// Blobs sit where a second process (another machine on the same file system) finds them, with nothing else
	// beside them.
	data := []byte("shared between workers")
	r, err := s.Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "demo", strings.TrimPrefix(string(r), "sha256:")[:2], strings.TrimPrefix(string(r), "sha256:")[2:])
	if b, err := os.ReadFile(p); err != nil || string(b) != string(data) {
		t.Fatalf("blob at %s: %q, %v", p, b, err)
	}
	other, err := Open(ctx, "file://"+filepath.ToSlash(dir), "demo", "unused")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := other.Get(ctx, r); err != nil || string(got) != string(data) {
		t.Errorf("second opener: %q, %v", got, err)
	}
	var extra []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), ".") {
			extra = append(extra, path)
		}
		return nil
	})
	if len(extra) > 0 {
		t.Errorf("side files in the store: %v", extra)
	}

	// Written once: a blob that is there is not rewritten, and a damaged one is detected when read.
	if err := os.WriteFile(p, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, data); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "damaged" {
		t.Errorf("Put rewrote an existing blob: %q", b)
	}
	if _, err := s.Get(ctx, r); err == nil || !strings.Contains(err.Error(), "hash mismatch") {
		t.Errorf("damaged blob read without error: %v", err)
	}
}

// TestS3Bucket runs the same checks against an S3-compatible server (gofakes3, in memory) over HTTP, through the
// same s3:// URL a real bucket takes.
func TestS3Bucket(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("ctxlab"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	url := "s3://ctxlab?region=us-east-1&use_path_style=true&disable_https=true&endpoint=" + srv.URL
	ctx := context.Background()
	s, err := OpenURL(ctx, url, "runs/demo")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exercise(t, s)

	data := []byte("in the bucket")
	r, err := s.Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := backend.GetObject("ctxlab", "runs/demo/"+strings.TrimPrefix(string(r), "sha256:")[:2]+"/"+strings.TrimPrefix(string(r), "sha256:")[2:], nil)
	if err != nil {
		t.Fatalf("object not at the expected key: %v", err)
	}
	obj.Contents.Close()

	// A blob replaced in the bucket by other bytes (written through S3 with valid checksums) is caught by the hash.
	raw, err := blob.OpenBucket(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.WriteAll(ctx, "runs/demo/"+strings.TrimPrefix(string(r), "sha256:")[:2]+"/"+strings.TrimPrefix(string(r), "sha256:")[2:], []byte("damaged"), nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, r); err == nil || got != nil || !strings.Contains(err.Error(), "hash mismatch") {
		t.Errorf("damaged blob read without error: %q, %v", got, err)
	}
	if strings.Contains(s.name, "endpoint") {
		t.Errorf("store name shows the URL's settings: %s", s.name)
	}
}

func TestOpenSettings(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, "", "demo", filepath.Join(dir, "cas"))
	if d, ok := s.(*cas.Dir); err != nil || !ok || d.Root() != filepath.Join(dir, "cas") {
		t.Errorf("empty setting: %T %v", s, err)
	}
	s, err = Open(ctx, filepath.Join(dir, "shared"), "demo", "unused")
	if d, ok := s.(*cas.Dir); err != nil || !ok || d.Root() != filepath.Join(dir, "shared", "demo") {
		t.Errorf("folder setting: %T %v", s, err)
	}
	if _, err := Open(ctx, "gs://bucket", "demo", ""); err == nil || !strings.Contains(err.Error(), "unsupported scheme") {
		t.Errorf("gs://: %v", err)
	}
}

// TestS3Objects: the run's keyed objects in an S3-compatible server (gofakes3, in memory, which answers
// If-None-Match: * as S3 does), under the run's prefix.
func TestS3Objects(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("ctxlab"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	url := "s3://ctxlab?region=us-east-1&use_path_style=true&disable_https=true&endpoint=" + srv.URL
	s, err := OpenObjects(context.Background(), url, "demo", "unused")
	if err != nil {
		t.Fatal(err)
	}
	objectstest.Exercise(t, s)
	if _, err := backend.HeadObject("ctxlab", "demo/once/k.json"); err != nil {
		t.Errorf("an object is not under the run's prefix: %v", err)
	}
}

func TestOpenObjectsSettings(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for setting, want := range map[string]string{
		"":                                      filepath.Join(dir, "run"),
		filepath.Join(dir, "shared"):            filepath.Join(dir, "shared", "demo"),
		"file://" + filepath.ToSlash(dir):       filepath.Join(dir, "demo"),
		"file://" + filepath.ToSlash(dir) + "/": filepath.Join(dir, "demo"),
	} {
		s, err := OpenObjects(ctx, setting, "demo", filepath.Join(dir, "run"))
		if d, ok := s.(objects.Dir); err != nil || !ok || d.Root != want {
			t.Errorf("%q: %#v, %v; want a folder at %s", setting, s, err, want)
		}
	}
	if _, err := OpenObjects(ctx, "file://host/x", "demo", ""); err == nil {
		t.Error("a file:// URL naming another host was taken")
	}
}

// TestCreateWhileTheWinnerIsInFlight: a conditional write refused (412) for a key whose object the server cannot
// show yet, another writer's create still in flight (a real S3-compatible server, versitygw, showed this window
// under load: TestObjectsOnARealS3Server's create races read "object not found" after the 412), waits for the
// winner's object and returns it, rather than failing the node that stored the same memo at the same moment.
func TestCreateWhileTheWinnerIsInFlight(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("ctxlab"); err != nil {
		t.Fatal(err)
	}
	fake := gofakes3.New(backend).Server()
	const object = "demo/late/k.json"
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/"+object) {
			switch {
			case r.Method == http.MethodPut && r.Header.Get("If-None-Match") == "*":
				w.WriteHeader(http.StatusPreconditionFailed)
				_, _ = io.WriteString(w, "<Error><Code>PreconditionFailed</Code><Message>exists</Message></Error>")
				return
			case r.Method == http.MethodGet && gets.Add(1) <= 2:
				if gets.Load() == 2 { // the winner's write lands after this read
					defer backend.PutObject("ctxlab", object, nil, strings.NewReader("winner"), 6, nil)
				}
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, "<Error><Code>NoSuchKey</Code><Message>not yet</Message></Error>")
				return
			}
		}
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	s, err := OpenObjects(context.Background(), "s3://ctxlab?region=us-east-1&use_path_style=true&disable_https=true"+
		"&endpoint="+srv.URL, "demo", "unused")
	if err != nil {
		t.Fatal(err)
	}
	existing, err := s.Create(context.Background(), "late/k.json", []byte("loser"), false)
	if err != nil || string(existing) != "winner" {
		t.Errorf("Create returned %q, %v; want the winner's object once it lands", existing, err)
	}
}
