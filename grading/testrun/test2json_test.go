package testrun

import (
	"context"
	"path/filepath"
	"testing"

	"ctxlab/grading/testlog"
)

// test2json runs from its own binary, found once, not through a go command per package.
func TestTest2jsonRunsDirectly(t *testing.T) {
	cmd := test2jsonCommand(context.Background(), t.TempDir(), true, "-t")
	if !filepath.IsAbs(cmd.Path) || filepath.Base(cmd.Path) != "test2json" || len(cmd.Args) != 2 {
		t.Fatalf("test2json runs as %q (%s), want the tool's own binary", cmd.Args, cmd.Path)
	}
	if again := test2jsonCommand(context.Background(), t.TempDir(), true); again.Path != cmd.Path {
		t.Errorf("second lookup found %s, first %s", again.Path, cmd.Path)
	}
	if fallback := test2jsonCommand(context.Background(), t.TempDir(), false, "-t"); fallback.Args[0] != "go" ||
		fallback.Args[1] != "tool" || fallback.Args[2] != "test2json" {
		t.Errorf("without direct: %q, want go tool test2json", fallback.Args)
	}
}

// When the remembered binary has gone (a cleaned build cache), the run falls back to go tool test2json and still
// reports every result; the next lookup asks the go command again.
func TestTest2jsonBinaryGone(t *testing.T) {
	test2jsonMu.Lock()
	test2jsonPath = filepath.Join(t.TempDir(), "test2json")
	test2jsonMu.Unlock()
	dir := module(t, map[string]string{
		"m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n\nfunc TestBad(t *testing.T) { t.Fatal(\"no\") }\n",
	})
	res := run(t, Options{Dir: dir, Tests: []string{"TestOK", "TestBad"}})
	v := testlog.Decide([]string{"TestOK"}, []string{"TestBad"}, res.Report)
	if len(v.Passed) != 1 || len(v.Failed) != 1 {
		t.Fatalf("verdict %+v, want TestOK passed and TestBad failed\n%s", v, res.Output)
	}
	if cmd := test2jsonCommand(context.Background(), dir, true); !fileExists(cmd.Path) {
		t.Errorf("after the fallback test2json runs as %s, which does not exist", cmd.Path)
	}
}
