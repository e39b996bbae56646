package s3server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/store/bucket"
	"ctxlab/store/cas"
	"ctxlab/store/objects/objectstest"
)

// setEnv puts the server's keys in this process's environment, for the AWS SDK the store opens.
func setEnv(t *testing.T, s *Server) {
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// TestObjectsOnARealS3Server runs the run's keyed objects' checks against Versity's gateway: conditional writes
// (If-None-Match: *) racing from several writers, listing from a key on (StartAfter), leases; and blobs written once
// under their hash, under the run's prefix on the server's disk.
func TestObjectsOnARealS3Server(t *testing.T) {
	s := Start(t)
	setEnv(t, s)
	ctx := context.Background()
	objs, err := bucket.OpenObjects(ctx, s.URL(), "demo", "unused")
	if err != nil {
		t.Fatal(err)
	}
	objectstest.Exercise(t, objs)
	if _, err := os.Stat(filepath.Join(s.Dir, Bucket, "demo", "once", "k.json")); err != nil {
		t.Errorf("an object is not under the run's prefix in the server's folder: %v", err)
	}
	blobs, err := bucket.OpenURL(ctx, s.URL(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := blobs.Put(ctx, []byte("a blob"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := blobs.Get(ctx, ref); err != nil || string(b) != "a blob" || ref != cas.RefOf([]byte("a blob")) {
		t.Errorf("blob round trip: %q, %v", b, err)
	}
}
