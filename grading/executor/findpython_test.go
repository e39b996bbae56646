package executor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakePython puts on PATH a python3 that records each call in a log and exits with code.
func fakePython(t *testing.T, code int) (dir, log string) {
	t.Helper()
	dir = t.TempDir()
	log = filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\nexit " + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "python3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir, log
}

func calls(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// The import check runs once per process and PATH: grading a Python instance must not pay for importing pytest
// every time.
func TestFindPythonChecksOnce(t *testing.T) {
	dir, log := fakePython(t, 0)
	for i := 0; i < 3; i++ {
		got, err := FindPython("", "pytest")
		if err != nil {
			t.Fatal(err)
		}
		if got != filepath.Join(dir, "python3") {
			t.Fatalf("call %d: %s, want the python3 first on PATH", i, got)
		}
	}
	if n := calls(t, log); n != 1 {
		t.Errorf("python3 was asked %d times to import pytest, want once", n)
	}
}

// A failed check is not remembered: the module may be installed later.
func TestFindPythonRetriesFailure(t *testing.T) {
	_, log := fakePython(t, 1)
	for i := 0; i < 2; i++ {
		if _, err := FindPython("", "ctxlab_no_such_module"); err == nil {
			t.Fatal("found a python3 that imports a module that does not exist")
		}
	}
	if n := calls(t, log); n != 2 {
		t.Errorf("python3 was asked %d times, want 2 (one per call)", n)
	}
}
