package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/testkit/dockertest"
)

// TestCheckDockerGraders: the docker executor with no engine names the engine; with an engine and no images of the
// namespace, every instance and the command that builds its image.
func TestCheckDockerGraders(t *testing.T) {
	checkEnv(t)
	runs := t.TempDir()
	spec := demoVariant(t, "{ name: 'chkdocker', grading+: { executor: 'docker', namespace: '"+
		testNamespace("ctxlabchecknoimages")+"' } }")
	engine, set := os.LookupEnv("DOCKER_HOST")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	code, stdout, stderr := runMain("check", spec, "--runs", runs)
	if code != exitUsage || !strings.Contains(stderr, "grading: no Docker engine answers") {
		t.Errorf("no engine: exit %d\n%s%s", code, stdout, stderr)
	}
	if set {
		os.Setenv("DOCKER_HOST", engine)
	} else {
		os.Unsetenv("DOCKER_HOST")
	}
	dockertest.Engine(t)
	code, stdout, stderr = runMain("check", spec, "--runs", runs)
	if code != exitUsage || !strings.Contains(stderr, "instances acme__humanize-1") ||
		!strings.Contains(stderr, "is not on this machine") || !strings.Contains(stderr, "starter images build --spec") {
		t.Errorf("no images: exit %d\n%s%s", code, stdout, stderr)
	}
	if n := strings.Count(stderr, "acme__"); n < 10 {
		t.Errorf("%d instances named, want the 11 (10 listed and 1 counted):\n%s", n, stderr)
	}
}

// checkEnv clears what the checks read from the environment (the endpoint, its key, the compression server) and
// sets kv over it. The checks run in-process, so these tests are not parallel.
func checkEnv(t *testing.T, kv ...string) {
	t.Helper()
	for _, k := range []string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY",
		"CTXLAB_COMPRESS_URL"} {
		t.Setenv(k, "")
	}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		t.Setenv(k, v)
	}
}
