package llm

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runGit runs git in dir and returns its output, failing the test with git's own message.
func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// binaryDiffs are `git diff --binary` patches made by real git: a binary file created, one changed a little (a
// delta block), one changed entirely (literal blocks), one deleted, beside a text file's hunk.
func binaryDiffs(t *testing.T) (base string, patches map[string]string) {
	t.Helper()
	base = t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	noise := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	write := func(dir, name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runGit(t, base, "init", "-q")
	big := noise(8 << 10)
	write(base, "small.bin", append([]byte{0}, noise(300)...))
	write(base, "big.bin", big)
	write(base, "gone.bin", append([]byte{0, 1, 2}, noise(90)...))
	write(base, "a.txt", []byte("one\ntwo\nthree\n"))
	runGit(t, base, "add", "-A")
	runGit(t, base, "commit", "-q", "-m", "base")

	patches = map[string]string{}
	edit := func(name string, change func(dir string)) {
		work := t.TempDir()
		runGit(t, work, "clone", "-q", base, ".")
		change(work)
		runGit(t, work, "add", "-A")
		patches[name] = runGit(t, work, "diff", "--cached", "--binary")
		if !strings.Contains(patches[name], "GIT binary patch") {
			t.Fatalf("%s: git wrote no binary hunk:\n%s", name, patches[name])
		}
	}
	edit("created", func(d string) { write(d, "new.bin", append([]byte{0, 0}, noise(2000)...)) })
	edit("delta", func(d string) {
		changed := bytes.Clone(big)
		copy(changed[4000:], "a few changed bytes")
		write(d, "big.bin", changed)
	})
	edit("literal", func(d string) { write(d, "small.bin", append([]byte{0}, noise(400)...)) })
	edit("deleted", func(d string) { os.Remove(filepath.Join(d, "gone.bin")) })
	edit("all with text", func(d string) {
		write(d, "new.bin", append([]byte{0}, noise(700)...))
		write(d, "small.bin", append([]byte{0}, noise(250)...))
		os.Remove(filepath.Join(d, "gone.bin"))
		write(d, "a.txt", []byte("one\n2\nthree\n"))
	})
	return base, patches
}

// TestExtractDiffKeepsBinaryHunks writes real `git diff --binary` patches into every shape of answer: the extractor
// must give each back byte for byte (the base85 data lines and the blank lines ending each block included), and
// git apply must accept what it gives.
func TestExtractDiffKeepsBinaryHunks(t *testing.T) {
	base, patches := binaryDiffs(t)
	if !strings.Contains(patches["delta"], "\ndelta ") || !strings.Contains(patches["literal"], "\nliteral ") {
		t.Fatalf("the corpus lacks a delta or a literal block:\n%s\n%s", patches["delta"], patches["literal"])
	}
	for name, d := range patches {
		for shape, answer := range answerShapes(d) {
			got, err := ExtractDiffDetail(answer)
			if err != nil {
				t.Errorf("%s as %s: %v", name, shape, err)
				continue
			}
			if got.Patch != d {
				t.Errorf("%s as %s: extracted diff differs: %s", name, shape, firstDifference(got.Patch, d))
				continue
			}
		}
		got, err := ExtractDiff("Here is the fix:\n\n```diff\n" + d + "```\n")
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "p.diff")
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		runGit(t, base, "apply", "--check", file)
	}
}
