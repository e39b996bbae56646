package images_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/internal/images"
	"ctxlab/testkit/dockertest"
)

// Pulls from a real registry on loopback (Debian's docker-registry) of an instance image built here (a repository
// on ctxlab's debootstrap base) and pushed to it: the missing image is pulled, the one present is left alone, a
// tag the registry lacks and a registry that does not answer are refused, each named with what the refusal means.
func TestPullFromRegistry(t *testing.T) {
	bin := dockertest.Engine(t)
	reg := dockertest.Registry(t)
	base := dockertest.Base(t, bin, images.LangPython)
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("pulled\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("%s/ctxlabtest%d", reg, os.Getpid())
	name := ns + "/sweb.eval.x86_64.acme_1776_pull-1:latest"
	present := ns + "/sweb.eval.x86_64.acme_1776_present-1:latest"
	ctx := context.Background()
	b := images.Builder{Docker: bin}
	for _, img := range []string{name, present} {
		if err := b.Instance(ctx, base, repo, img, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = exec.Command(bin, "image", "rm", "-f", img).Run() })
	}
	start := time.Now()
	if out, err := exec.Command(bin, "push", name).CombinedOutput(); err != nil {
		t.Fatalf("docker push: %v\n%s", err, out)
	}
	t.Logf("pushed %s in %s", name, time.Since(start).Round(time.Millisecond))
	if out, err := exec.Command(bin, "image", "rm", name).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if b.Exists(ctx, name) {
		t.Fatal("the pushed image is still on the engine")
	}

	absent := ns + "/sweb.eval.x86_64.acme_1776_absent-1:latest"
	deaf := "127.0.0.1:1/ctxlabtest/sweb.eval.x86_64.acme_1776_deaf-1:latest"
	var log bytes.Buffer
	b.Log = &log
	start = time.Now()
	pulled, failed := b.Pull(ctx, []string{name, present, absent, deaf, name}, 3)
	t.Logf("pulled in %s:\n%s", time.Since(start).Round(time.Millisecond), log.String())
	if !slices.Equal(pulled, []string{name}) || !b.Exists(ctx, name) {
		t.Errorf("pulled %v (on the engine: %v), want only %s", pulled, b.Exists(ctx, name), name)
	}
	reasons := map[string]string{}
	for _, err := range failed {
		var pe *images.PullError
		if !errors.As(err, &pe) {
			t.Fatalf("not a PullError: %v", err)
		}
		reasons[pe.Image] = pe.Reason
		if !strings.Contains(err.Error(), pe.Image) || pe.Output == "" {
			t.Errorf("the error does not name the image and the CLI's words: %v", err)
		}
	}
	if len(failed) != 2 || reasons[absent] != "the registry has no such image or tag" ||
		reasons[deaf] != "no registry answers at that address" {
		t.Errorf("refusals %v (%v)", reasons, failed)
	}
	for _, want := range []string{"pulling 3 image(s) the engine lacks, 3 at once", "] pulled " + name,
		"] " + absent + " not pulled: the registry has no such image or tag"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, log.String())
		}
	}
	// Everything there: nothing to pull, nothing said.
	log.Reset()
	if pulled, failed := b.Pull(ctx, []string{name, present}, 2); len(pulled)+len(failed) != 0 || log.Len() != 0 {
		t.Errorf("pulled %v, failed %v, said %q", pulled, failed, log.String())
	}
}
