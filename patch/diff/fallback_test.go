package diff

import (
	"ctxlab/testkit/filetree"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// moved is base with three lines inserted at the top: every hunk made against base is found 3 lines lower.
var moved = append([]byte("new 1\nnew 2\nnew 3\n"), base...)

func setLine(src []byte, i int, s string) []byte {
	return edited(src, func(ls []string) []string { ls[i] = s; return ls })
}

// external runs a patch tool on a copy of files and returns the resulting files, or nil when the tool fails.
func external(t *testing.T, files map[string][]byte, patch string, tool ...string) map[string][]byte {
	t.Helper()
	if _, err := exec.LookPath(tool[0]); err != nil {
		t.Skipf("%s not installed", tool[0])
	}
	dir := t.TempDir()
	filetree.Write(t, dir, files)
	pf := filepath.Join(t.TempDir(), "p.diff")
	if err := os.WriteFile(pf, []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool[0], append(tool[1:], pf)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("%v: %v\n%s", tool, err, out)
		return nil
	}
	return snapshotFiles(t, dir)
}

func snapshotFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".orig") || strings.HasSuffix(p, ".rej") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func applyCopy(t *testing.T, files map[string][]byte, patch string) (Report, map[string][]byte, error) {
	t.Helper()
	dir := t.TempDir()
	filetree.Write(t, dir, files)
	rep, err := Apply(dir, patch, Options{})
	return rep, snapshotFiles(t, dir), err
}

func TestApplyStrictFindsShiftedHunksAsGitApplyDoes(t *testing.T) {
	want := setLine(base, 20, "changed")
	patch := Unified("f.txt", base, want)
	files := map[string][]byte{"f.txt": moved}
	rep, got, err := applyCopy(t, files, patch)
	if err != nil || rep.Outcome != Applied || rep.Stage != "strict" {
		t.Fatalf("report %+v, err %v", rep, err)
	}
	if len(rep.Shifted) != 1 || rep.Shifted[0].Offset != 3 || rep.Shifted[0].Fuzz != 0 {
		t.Errorf("shifted = %+v, want one hunk at offset 3", rep.Shifted)
	}
	git := external(t, files, patch, "git", "apply")
	if git == nil || !reflect.DeepEqual(got, git) {
		t.Errorf("differs from git apply:\nours %q\ngit  %q", got["f.txt"], git["f.txt"])
	}
	// ApplyFiles, the strict in-memory applier, agrees.
	mem, err := ApplyFiles(func(string) ([]byte, bool) { return moved, true }, patch)
	if err != nil || string(mem["f.txt"]) != string(got["f.txt"]) {
		t.Errorf("ApplyFiles: %q, %v", mem["f.txt"], err)
	}
}

func TestApplyFuzzWhenContextDrifted(t *testing.T) {
	want := setLine(base, 20, "changed")
	patch := Unified("f.txt", base, want)
	// The file the patch meets has a different line in the hunk's context (line 19, two above the change) and is
	// shifted: git apply refuses, patch --fuzz applies.
	target := setLine(moved, 3+18, "drifted context")
	files := map[string][]byte{"f.txt": target, "other.txt": []byte("untouched\n")}
	rep, got, err := applyCopy(t, files, patch)
	if err != nil || rep.Outcome != AppliedWithFuzz || rep.Stage != "fuzz" {
		t.Fatalf("report %+v, err %v", rep, err)
	}
	if len(rep.Rejected) != 1 || rep.Rejected[0].Path != "f.txt" || rep.Rejected[0].Hunk != 1 ||
		!strings.Contains(rep.Rejected[0].Reason, "hunk #1") {
		t.Errorf("rejected = %+v, want hunk 1 of f.txt with a reason", rep.Rejected)
	}
	if len(rep.Shifted) != 1 || rep.Shifted[0].Fuzz == 0 || rep.Shifted[0].Offset != 3 {
		t.Errorf("shifted = %+v, want one fuzzed hunk at offset 3", rep.Shifted)
	}
	if external(t, files, patch, "git", "apply") != nil {
		t.Error("git apply accepted the drifted file; the case does not test the fallback")
	}
	gnu := external(t, files, patch, "patch", "--batch", "--fuzz=5", "-p1", "-i")
	if gnu == nil || !reflect.DeepEqual(got, gnu) {
		t.Errorf("differs from patch --fuzz=5:\nours %q\ngnu  %q", got["f.txt"], gnu["f.txt"])
	}
	if !strings.Contains(string(got["f.txt"]), "drifted context\nline 20\nchanged\nline 22\n") {
		t.Errorf("fuzzed result keeps the file's own context lines: %q", got["f.txt"])
	}
}

func TestApplyFailsWhenChangedLinesDiffer(t *testing.T) {
	patch := Unified("f.txt", base, setLine(base, 20, "changed")) +
		Unified("g.txt", []byte("a\n"), []byte("b\n"))
	// The line the patch removes is not there: no fuzz may paper over that.
	files := map[string][]byte{"f.txt": setLine(base, 20, "someone else's edit"), "g.txt": []byte("a\n")}
	rep, got, err := applyCopy(t, files, patch)
	if !errors.Is(err, ErrConflict) || rep.Outcome != Failed || rep.Stage != "fuzz" {
		t.Fatalf("report %+v, err %v", rep, err)
	}
	if len(rep.Rejected) != 1 || rep.Rejected[0].Path != "f.txt" {
		t.Errorf("rejected = %+v", rep.Rejected)
	}
	if !reflect.DeepEqual(got, files) {
		t.Errorf("a failed patch changed files: %v", got)
	}
	if external(t, files, patch, "patch", "--batch", "--fuzz=5", "-p1", "--dry-run", "-i") != nil {
		t.Error("GNU patch applied it; the case is not a failure")
	}
}

func TestApplyRejectsMissingFileAsWhole(t *testing.T) {
	patch := Unified("a.txt", []byte("a\n"), []byte("A\n")) + Unified("missing.txt", []byte("x\n"), []byte("y\n"))
	files := map[string][]byte{"a.txt": []byte("a\n")}
	rep, got, err := applyCopy(t, files, patch)
	if !errors.Is(err, ErrConflict) || rep.Outcome != Failed {
		t.Fatalf("report %+v, err %v", rep, err)
	}
	if len(rep.Rejected) != 1 || rep.Rejected[0].Path != "missing.txt" || rep.Rejected[0].Hunk != 0 {
		t.Errorf("rejected = %+v, want missing.txt as a whole", rep.Rejected)
	}
	if !reflect.DeepEqual(got, files) {
		t.Errorf("files changed: %v", got)
	}
}

func TestApplyOutcomesOfBadPatches(t *testing.T) {
	dir := t.TempDir()
	filetree.Write(t, dir, map[string][]byte{"a.txt": []byte("a\n")})
	for patch, want := range map[string]Outcome{
		"":                                  Empty,
		"  \n\n":                            Empty,
		"I fixed it!\n":                     Malformed,
		"@@ -1 +1 @@\n-a\n+b":               Malformed,
		Unified("../x", nil, []byte("x\n")): Escapes,
		"--- /dev/null\n+++ /tmp/x\n@@ -0,0 +1 @@\n+x\n": Escapes,
	} {
		rep, err := Apply(dir, patch, Options{})
		if err == nil || rep.Outcome != want || OutcomeOf(err) != want {
			t.Errorf("%q: outcome %s (%v), want %s", patch, rep.Outcome, err, want)
		}
	}
	if got := snapshotFiles(t, dir); len(got) != 1 || string(got["a.txt"]) != "a\n" {
		t.Errorf("files changed: %v", got)
	}
}

func TestApplyEscapeThroughSymlinkRefusedInEveryStage(t *testing.T) {
	top := t.TempDir()
	outside := filepath.Join(top, "outside")
	wt := filepath.Join(top, "wt")
	filetree.Write(t, outside, map[string][]byte{"key": base})
	filetree.Write(t, wt, map[string][]byte{"ok.txt": []byte("ok\n")})
	if err := os.Symlink(outside, filepath.Join(wt, "link")); err != nil {
		t.Fatal(err)
	}
	// A patch whose strict stage fails (drifted context) must not reach the link through the fallbacks either.
	patch := Unified("ok.txt", []byte("ok\n"), []byte("OK\n")) +
		Unified("link/key", setLine(base, 18, "drift"), setLine(setLine(base, 18, "drift"), 20, "pwned"))
	rep, err := Apply(wt, patch, Options{})
	if !errors.Is(err, ErrEscapes) || rep.Outcome != Escapes {
		t.Fatalf("report %+v, err %v", rep, err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "key")); string(b) != string(base) {
		t.Error("a file outside the worktree changed")
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "ok.txt")); string(b) != "ok\n" {
		t.Error("a refused patch was applied in part")
	}
}

// TestApplyAgreesWithGNUPatch makes random edits, applies their patches to perturbed files (shifted, context
// drifted) and checks that whenever GNU patch --fuzz=5 applies a patch, Apply does too, with the same result.
func TestApplyAgreesWithGNUPatch(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("patch not installed")
	}
	rng := rand.New(rand.NewSource(5))
	agree, both, onlyOurs := 0, 0, 0
	const cases = 150
	for c := 0; c < cases; c++ {
		n := 30 + rng.Intn(30)
		src := lines(n, func(i int) string { return fmt.Sprintf("l%d", i) })
		dst := edited(src, func(ls []string) []string {
			for k := 0; k < 1+rng.Intn(3); k++ {
				i := rng.Intn(len(ls))
				switch rng.Intn(3) {
				case 0:
					ls[i] = "edit " + ls[i]
				case 1:
					ls = append(ls[:i], ls[i+1:]...)
				default:
					ls = append(ls[:i], append([]string{"ins"}, ls[i:]...)...)
				}
			}
			return ls
		})
		patch := Unified("f", src, dst)
		if patch == "" {
			continue
		}
		// Perturb the target: shift it and change one to three lines somewhere.
		target := edited(src, func(ls []string) []string {
			ls = append([]string{"top1", "top2"}, ls...)
			for k := 0; k < 1+rng.Intn(3); k++ {
				i := rng.Intn(len(ls))
				ls[i] = "perturbed " + ls[i]
			}
			return ls
		})
		files := map[string][]byte{"f": target}
		gnu := external(t, files, patch, "patch", "--batch", "--fuzz=5", "-p1", "-i")
		rep, got, err := applyCopy(t, files, patch)
		if gnu == nil {
			if err == nil {
				onlyOurs++
				t.Logf("case %d: Apply applied (%s) what GNU patch refused:\n%s", c, rep.Outcome, patch)
			}
			continue
		}
		both++
		if err != nil {
			t.Errorf("case %d: GNU patch applied, Apply did not: %v\n%s", c, err, patch)
			continue
		}
		if !reflect.DeepEqual(got, gnu) {
			t.Errorf("case %d (%s): results differ\nours %q\ngnu  %q\n%s", c, rep.Outcome, got["f"], gnu["f"], patch)
			continue
		}
		agree++
	}
	t.Logf("GNU patch applied %d of %d perturbed patches; Apply agreed on %d; Apply alone applied %d", both, cases, agree, onlyOurs)
	if onlyOurs > 0 {
		t.Errorf("Apply applied %d patches GNU patch refuses: more lenient than the harness", onlyOurs)
	}
	if both < cases/4 {
		t.Errorf("only %d cases applied; the comparison is too weak", both)
	}
}

// TestStrictAgreesWithGitApply checks the strict stage against git apply on random edits applied to shifted and
// perturbed files: both apply the same patches, with the same result.
func TestStrictAgreesWithGitApply(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	rng := rand.New(rand.NewSource(7))
	const cases = 150
	applied, agree := 0, 0
	for c := 0; c < cases; c++ {
		src := lines(30+rng.Intn(30), func(i int) string { return fmt.Sprintf("l%d", i) })
		dst := edited(src, func(ls []string) []string {
			for k := 0; k < 1+rng.Intn(3); k++ {
				i := rng.Intn(len(ls))
				if rng.Intn(2) == 0 {
					ls[i] = "edit " + ls[i]
				} else {
					ls = append(ls[:i], append([]string{"ins"}, ls[i:]...)...)
				}
			}
			return ls
		})
		patch := Unified("f", src, dst)
		target := edited(src, func(ls []string) []string {
			ls = append(make([]string, rng.Intn(4)), ls...)
			for i := range ls {
				if ls[i] == "" {
					ls[i] = fmt.Sprintf("top%d", i)
				}
			}
			if rng.Intn(2) == 0 {
				i := rng.Intn(len(ls))
				ls[i] = "perturbed " + ls[i]
			}
			return ls
		})
		files := map[string][]byte{"f": target}
		git := external(t, files, patch, "git", "apply")
		out, err := ApplyFiles(func(string) ([]byte, bool) { return target, true }, patch)
		switch {
		case git == nil && err == nil:
			t.Errorf("case %d: strict applied what git apply refused:\n%s", c, patch)
		case git != nil && err != nil:
			t.Errorf("case %d: git apply applied, strict did not: %v\n%s", c, err, patch)
		case git != nil && string(git["f"]) != string(out["f"]):
			t.Errorf("case %d: results differ\nours %q\ngit  %q", c, out["f"], git["f"])
		case git != nil:
			applied++
			agree++
		default:
			agree++
		}
	}
	t.Logf("git apply applied %d of %d; strict agreed on %d", applied, cases, agree)
	if applied < cases/4 || applied == cases {
		t.Errorf("git apply applied %d of %d: the comparison is too one-sided", applied, cases)
	}
}

// crlf gives every line of text a CRLF end.
func crlf(text string) string { return strings.ReplaceAll(text, "\n", "\r\n") }

// TestApplyCRLFPatchAsTheHarness is issue 39's eleventh defect: a dataset patch whose lines end in CRLF was
// patch_failed "calc.go: patch does not apply: no such file" (the file exists), while the harness's third step,
// `patch --batch --fuzz=5 -p1`, applies it: GNU patch strips the patch's CRs when its +++ line ends in one. Apply
// takes what GNU patch takes and makes what it makes, checked against GNU patch itself; when nothing applies, the
// error says the line ends differ, not that a file is missing.
func TestApplyCRLFPatchAsTheHarness(t *testing.T) {
	lf := []byte("package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n")
	patch := "diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -1,5 +1,5 @@\n package calc\n \n" +
		" func Add(a, b int) int {\n-\treturn a - b\n+\treturn a + b\n }\n"
	for name, c := range map[string]struct {
		file  []byte
		patch string
	}{
		"CRLF patch, LF file":             {lf, crlf(patch)},
		"CRLF from its +++ line, LF file": {lf, strings.Replace(crlf(patch), "diff --git a/calc.go b/calc.go\r\n--- a/calc.go\r\n", "diff --git a/calc.go b/calc.go\n--- a/calc.go\n", 1)},
		"CRLF patch, CRLF file":           {[]byte(crlf(string(lf))), crlf(patch)},
		"CRLF body, CRLF file":            {[]byte(crlf(string(lf))), strings.Replace(crlf(patch), "\r\n", "\n", 4)},
	} {
		t.Run(name, func(t *testing.T) {
			files := map[string][]byte{"calc.go": c.file}
			want := external(t, files, c.patch, "patch", "--batch", "--fuzz=5", "-p1", "-i")
			if want == nil { // GNU patch refuses it: then git apply, the harness's first step, must take it
				want = external(t, files, c.patch, "git", "apply", "--verbose")
			}
			if want == nil {
				t.Fatal("neither git apply nor GNU patch applies the case: it tests nothing")
			}
			rep, got, err := applyCopy(t, files, c.patch)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s (%s): %q, %v; the harness makes %q", rep.Outcome, rep.Stage, got["calc.go"], err,
					want["calc.go"])
			}
		})
	}

	// Lines that end in CRLF only in the patch's hunks (its +++ line is LF): GNU patch keeps the CRs, and neither
	// it nor git apply matches the LF file. The error names the cause.
	body := strings.Replace(crlf(patch), "\r\n", "\n", 4)
	files := map[string][]byte{"calc.go": lf}
	if external(t, files, body, "patch", "--batch", "--fuzz=5", "-p1", "-i") != nil {
		t.Fatal("GNU patch applied a CRLF body to an LF file: the case tests nothing")
	}
	_, _, err := applyCopy(t, files, body)
	if err == nil || !strings.Contains(err.Error(), "line ends") || strings.Contains(err.Error(), "no such file") {
		t.Errorf("a CRLF body against an LF file: %v; want the line ends named", err)
	}
}
