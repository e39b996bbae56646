package executor

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"ctxlab/grading/testlog"
	"ctxlab/internal/images"
	"ctxlab/testkit/dockertest"
)

// TestPythonParityDebianSuitesDocker grades the Debian corpus (debianSuites) with the docker executor, in
// instance images built here on ctxlab's Python base image (shared with TestDockerEngine's), each row's environment
// stated in install_config as for the local executor: the eval script runs its install (pip install -e ., which
// makes simplejson's src layout importable) and its test command through ctxlab's results channel. The references
// run in a container of the same base image, on the same trees (mounted at their own paths), with the module put
// on PYTHONPATH instead of installed, so an install that did not happen shows as a disagreement.
func TestPythonParityDebianSuitesDocker(t *testing.T) {
	t.Parallel()
	bin := dockertest.Engine(t)
	base := dockertest.Base(t, bin, images.LangPython)
	// One reference container for every tree of the test (each container costs the engine a copy of the image on
	// vfs storage), started beside the instance images' builds: the trees are written under shared, mounted at the
	// same path.
	shared := t.TempDir()
	ref := fmt.Sprintf("ctxlab-debref-%d-%d", os.Getpid(), time.Now().UnixNano())
	run := append([]string{"run", "-d", "--name", ref, "--network", "none", "--init", "-v", shared + ":" + shared},
		ContainerLabels()...)
	var refErr error
	refReady := make(chan struct{})
	go func() {
		defer close(refReady)
		if out, err := exec.Command(bin, append(run, base, "tail", "-f", "/dev/null")...).CombinedOutput(); err != nil {
			refErr = fmt.Errorf("the references' container: %v\n%s", err, out)
		}
	}()
	t.Cleanup(func() {
		<-refReady
		_ = exec.Command(bin, "rm", "-f", "-v", ref).Run()
	})
	waitRef := func(t *testing.T) string {
		<-refReady
		if refErr != nil {
			t.Fatal(refErr)
		}
		return ref
	}
	for _, s := range debianSuites {
		t.Run(s.pkg, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(shared, s.module)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			debianSuiteDockerParity(t, bin, waitRef, dir, newDebianCorpus(t, s))
		})
	}
}

// debianSuiteDockerParity grades a corpus with the docker executor, its references run in the container waitRef
// returns, on trees written under dir (mounted there at the same path).
func debianSuiteDockerParity(t *testing.T, bin string, waitRef func(*testing.T) string, dir string, c *debianCorpus) {
	in := c.instance(c.runners[0], nil)
	waitImage := startRepoImage(t, bin, images.LangPython, InstanceImage(engineNamespace, in.InstanceID), c.repo)
	// The references of every scenario first, while the image builds.
	start := time.Now()
	refs := make([]map[string]map[string]string, len(c.scenarios))
	ref := waitRef(t)
	for i, sc := range c.scenarios {
		tree := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(tree, 0o755); err != nil {
			t.Fatal(err)
		}
		c.tree(t, tree, sc)
		refs[i] = c.references(t, func(args ...string) []byte {
			cmd := exec.Command(bin, append([]string{"exec", "-u", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
				"-w", tree, "-e", "HOME=/tmp", "-e", "PYTHONDONTWRITEBYTECODE=1", "-e", c.pythonPath, ref, "python3"},
				args...)...)
			out, _ := cmd.Output() // failing tests exit non-zero
			return out
		}, filepath.Join(tree, ".junit.xml"))
	}
	t.Logf("references ready in %s", time.Since(start).Round(time.Second))
	if err := waitImage(); err != nil {
		t.Fatal(err)
	}
	// The grades run side by side: each costs the engine a container, a copy of the image on vfs storage.
	cfg := Config{Docker: bin, Namespace: engineNamespace, Tests: TestsFiles}
	var mu sync.Mutex
	var summary []string
	t.Run("grades", func(t *testing.T) {
		for i, sc := range c.scenarios {
			for _, runner := range c.runners {
				name := sc.name + ", " + runner.parser + " runner"
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					line := debianDockerGrade(t, c, cfg, sc, runner, refs[i][runner.parser], name)
					mu.Lock()
					summary = append(summary, line)
					mu.Unlock()
				})
			}
		}
	})
	slices.Sort(summary)
	t.Logf("%s %s (%d test files), docker executor:\n%s", c.s.pkg, c.s.version, len(c.testFiles), strings.Join(summary, "\n"))
}

// debianDockerGrade grades a scenario of the corpus with a runner in the docker executor, compares it with the
// reference and returns the summary line.
func debianDockerGrade(t *testing.T, c *debianCorpus, cfg Config, sc debianScenario, runner debianRunner,
	ref map[string]string, run string) string {
	in := c.instance(runner, slices.Sorted(maps.Keys(ref)))
	// A row with an install_config runs the harness's test directives (the test patch's files), whatever
	// grading.tests says: listed mode is the files mode here, so only that one runs.
	listed := cfg
	listed.Tests = TestsListed
	if a, b := evalPlan(Request{Instance: in, Config: cfg}, LangPython), evalPlan(Request{Instance: in,
		Config: listed}, LangPython); a.Cmd != b.Cmd || a.Source != "install_config" {
		t.Fatalf("the listed mode's plan differs from the files mode's: %+v, %+v", a, b)
	}
	res, err := Docker{}.Run(context.Background(), Request{Instance: in, Patch: sc.patch, Timeout: 10 * time.Minute,
		Config: cfg})
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Output)
	}
	line := compareBuckets(t, run, ref, testlog.DecideInstance(in, res.Report))
	if res.Note != "" || !res.ExitCodeKnown {
		t.Errorf("note %q, exit code known %v", res.Note, res.ExitCodeKnown)
	}
	// The stated install ran and took: the module is installed from the repository (in develop mode).
	if !strings.Contains(string(res.Output), "Successfully installed "+c.s.module) {
		t.Errorf("the install did not run or failed")
	}
	if t.Failed() {
		t.Logf("the eval log:\n%s", res.Output)
	}
	return line
}
