package docs

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fileLineRe is the line above a code block that the page shows as a whole file.
var fileLineRe = regexp.MustCompile("^File `([^`]+)`:$")

// shownFiles returns the files a page shows whole (each code block right under a line "File `PATH`:"), by path,
// and its other code blocks.
func shownFiles(t *testing.T, path string) (map[string]string, []block) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	files := map[string]string{}
	var others []block
	for _, bl := range parsePage(path, string(b)).blocks {
		if m := fileLineRe.FindStringSubmatch(lines[max(bl.line-2, 0)]); m != nil {
			if _, dup := files[m[1]]; dup {
				t.Errorf("%s:%d: file %s shown twice", path, bl.line, m[1])
			}
			files[m[1]] = bl.text
			continue
		}
		others = append(others, bl)
	}
	return files, others
}

// containsLines reports whether the lines of part, stripped of their indentation, are consecutive lines of text.
func containsLines(text, part string) bool {
	trim := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			out = append(out, strings.TrimSpace(l))
		}
		return out
	}
	all, want := trim(text), trim(part)
	for i := 0; i+len(want) <= len(all); i++ {
		if slices.Equal(all[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

// TestAddingAnActivity builds what adding-an-activity.md shows, exactly as it shows it: the files it shows whole are
// added to the module (go's -overlay: the tree is not touched), the packages they join are vetted with their tests
// (a name the page's step shares with a test of the package fails here), and the page's test runs. Every other
// block of the page must be part of one of those files. Adding a kind stays two files: the declaration and the step,
// plus the offline answers of its model task and its test, and nothing else of the module changes.
func TestAddingAnActivity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the steps' test binary with the page's files")
	}
	files, others := shownFiles(t, "adding-an-activity.md")
	want := []string{"activities/llm/offline/rerank.go", "activities/steps/rerank.go", "activities/steps/rerank_test.go",
		"specs/kind_rerank.go"}
	if got := slices.Sorted(func(yield func(string) bool) {
		for p := range files {
			if !yield(p) {
				return
			}
		}
	}); !slices.Equal(got, want) {
		t.Fatalf("the page shows the files %v, want %v (a kind: its declaration and its step, plus a model task's "+
			"offline answers and the step's test)", got, want)
	}
	for _, b := range others {
		found := false
		for _, text := range files {
			found = found || containsLines(text, b.text)
		}
		if !found {
			t.Errorf("adding-an-activity.md:%d: the block is in none of the files the page shows whole", b.line)
		}
	}

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	overlay := map[string]map[string]string{"Replace": {}}
	for i, p := range want {
		dst := filepath.Join(root, filepath.FromSlash(p))
		if _, err := os.Stat(dst); err == nil {
			t.Fatalf("%s exists: the page's kind must be new to the module", p)
		}
		src := filepath.Join(dir, filepath.Base(p)+"."+string(rune('a'+i)))
		if err := os.WriteFile(src, []byte(files[p]), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay["Replace"][dst] = src
	}
	b, _ := json.Marshal(overlay)
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	goTool := filepath.Join(runtimeGOROOT(t), "bin", "go")
	for _, args := range [][]string{
		{"vet", "-overlay", overlayFile, "./specs/", "./activities/llm/offline/", "./activities/steps/"},
		{"test", "-overlay", overlayFile, "-count=1", "-v", "-run", "^TestRerank$", "./activities/steps/"},
	} {
		cmd := exec.Command(goTool, args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("go %s with the page's files: %v\n%s", args[0], err, out)
		}
		if args[0] == "test" && !strings.Contains(string(out), "--- PASS: TestRerank ") {
			t.Errorf("the page's test did not run and pass:\n%s", out)
		}
	}
}

// runtimeGOROOT is the Go installation of the go command on PATH, which builds the module as `go test` does.
func runtimeGOROOT(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}
