// Package dockertest finds the Docker engine for tests that grade in real containers. Plain `go test` skips those
// tests when no engine answers; scripts/test sets CTXLAB_REQUIRE_DOCKER=1 (after installing docker.io and starting
// a daemon), and then a missing engine fails them with the commands that provide one.
package dockertest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"ctxlab/internal/images"
)

// RequireEnv names the variable that turns a missing engine from a skip into a failure.
const RequireEnv = "CTXLAB_REQUIRE_DOCKER"

// Engine returns the docker program of a running engine, after logging the engine's version; it skips the test
// (or fails it, under CTXLAB_REQUIRE_DOCKER=1) when none answers.
func Engine(t testing.TB) string {
	t.Helper()
	bin := "docker"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "version", "--format", "{{.Server.Version}} ({{.Server.Os}}/{{.Server.Arch}})").CombinedOutput()
	if err != nil {
		msg := "no Docker engine answers (`docker version`: " + strings.TrimSpace(string(out)) + "): install one " +
			"with `apt-get install -y docker.io debootstrap` and start it with `dockerd --storage-driver=vfs " +
			"--iptables=false --ip6tables=false --bridge=none &`, or run scripts/test, which does both"
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Logf("Docker engine %s", strings.TrimSpace(string(out)))
	return bin
}

// Base returns ctxlab's base image of a language (images.Builder.Base), building it once per machine; failures
// are fatal, since a running engine and debootstrap are all it needs.
func Base(t testing.TB, bin, lang string) string {
	t.Helper()
	if _, err := exec.LookPath("debootstrap"); err != nil {
		if name, nerr := images.BaseName(lang); nerr == nil && (images.Builder{Docker: bin}).Exists(context.Background(), name) {
			return name
		}
		t.Fatalf("debootstrap is needed to build the %s base image: apt-get install -y debootstrap (or run scripts/test)", lang)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	name, err := images.Builder{Docker: bin, Log: logWriter{t}}.Base(ctx, lang)
	if err != nil {
		t.Fatalf("base image for %s: %v", lang, err)
	}
	t.Logf("base image %s ready in %s", name, time.Since(start).Round(time.Millisecond))
	return name
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
