// Package demobench builds ctxlab's own demo benchmark: small Go and Python repositories with real bugs, made as git
// repositories by this code (nothing is downloaded) and described in SWE-bench JSONL. The demo sweep, the tests and
// CI run on it, so it is made to be a fair small-scale test of context selection and of grading:
//
//   - every repository has 30 to 45 files in several packages, with a README, a docs/ folder, CI configuration and
//     (Go) a few shared helper packages, so that a retriever has to choose;
//   - every instance is a real bug with tests (FAIL_TO_PASS) that fail at base_commit and pass with the gold
//     patch, and existing tests (PASS_TO_PASS) that pass both before and after;
//   - the problem statements follow the shape of the repository's .github/ISSUE_TEMPLATE/bug_report.md, so a
//     lexical retriever is tempted to return the template;
//   - the instances mix a one-character fix (fmt.Sprint for fmt.Sprintf), a gold patch over two files, gold files of
//     300+ lines, issues that only quote an error message or a command-line flag defined far from the fix, issues
//     that name the function to fix, and test files that repeat the issue's words but need no change;
//   - one repository carries two instances at different base commits;
//   - the shapes that real repositories give graders: a gold patch ending in a hunk whose last line is a blank
//     context line; a Go test name declared in two packages; a module that requires a third-party module, which
//     the generator publishes into the dataset's module proxy folder (GoproxyDir) so that grading downloads it
//     from an empty module cache without a network; a Python package whose PASS_TO_PASS ids include tests in files
//     the test patch leaves alone.
//
// Each repository's history ends at the latest base commit of its instances; the gold patches and their fixes are
// not in any repository.
package demobench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"ctxlab/dataset/swebench"
	"ctxlab/patch/diff"
)

// Result describes a generated benchmark.
type Result struct {
	// File is the dataset, dir/demo.jsonl.
	File string
	// DatasetDir is the folder holding File and repos/<owner>/<name> (the {dataset_dir} of a spec).
	DatasetDir string
	// Instances are the rows of File.
	Instances []swebench.Instance
}

// Names of what Generate writes into its folder.
const (
	DatasetFile = "demo.jsonl"
	ReposDir    = "repos"
	markerFile  = ".demobench-complete"
)

// RepoDir returns the folder of repository repo ("owner/name") in a dataset folder.
func RepoDir(datasetDir, repo string) string {
	return filepath.Join(datasetDir, ReposDir, filepath.FromSlash(repo))
}

// Generate writes the benchmark into dir: dir/repos/<owner>/<name> (git repositories) and dir/demo.jsonl. If dir
// already holds a complete generation of the same Version it is returned untouched. Otherwise the benchmark is built
// in a temporary sibling folder that is renamed into place when complete, so a crash never leaves a half-written
// dataset behind; an existing incomplete or outdated generation is replaced. A folder holding anything else is
// refused rather than deleted.
func Generate(dir string) (*Result, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("demobench: %w", err)
	}
	dir = abs
	if res, err := load(dir); err == nil {
		return res, nil
	}
	if err := checkReplaceable(dir); err != nil {
		return nil, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("demobench: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".building-")
	if err != nil {
		return nil, fmt.Errorf("demobench: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := build(tmp); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp made it private
		return nil, fmt.Errorf("demobench: %w", err)
	}
	if _, err := os.Lstat(dir); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("demobench: removing the outdated %s: %w", dir, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process may have finished the same generation first.
		if res, lerr := load(dir); lerr == nil {
			return res, nil
		}
		return nil, fmt.Errorf("demobench: moving the dataset into place: %w", err)
	}
	return load(dir)
}

// load returns the generation in dir if it is complete, of this Version and unmodified.
func load(dir string) (*Result, error) {
	marker, err := os.ReadFile(filepath.Join(dir, markerFile))
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, DatasetFile)
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if string(marker) != markerText(data) {
		return nil, errors.New("demobench: marker does not match this version or the dataset file")
	}
	rows, err := swebench.Read(bytes.NewReader(data), file)
	if err != nil {
		return nil, err
	}
	for _, in := range rows {
		if fi, err := os.Stat(filepath.Join(RepoDir(dir, in.Repo), ".git")); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("demobench: repository %s is missing", in.Repo)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, GoproxyDir)); err != nil || !fi.IsDir() {
		return nil, errors.New("demobench: the module proxy folder is missing")
	}
	return &Result{File: file, DatasetDir: dir, Instances: rows}, nil
}

func markerText(dataset []byte) string {
	sum := sha256.Sum256(dataset)
	return fmt.Sprintf("demobench %s\n%s sha256:%s\n", Version(), DatasetFile, hex.EncodeToString(sum[:]))
}

// checkReplaceable refuses to replace a folder that holds files Generate did not write.
func checkReplaceable(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("demobench: %w", err)
	}
	for _, e := range entries {
		switch e.Name() {
		case DatasetFile, ReposDir, GoproxyDir, markerFile:
		default:
			return fmt.Errorf("demobench: refusing to replace %s: it holds %q, which the generator did not write", dir, e.Name())
		}
	}
	return nil
}

// build writes a complete generation into dir, marker last.
func build(dir string) error {
	if err := writeGoproxy(filepath.Join(dir, GoproxyDir)); err != nil {
		return fmt.Errorf("demobench: %w", err)
	}
	var rows []swebench.Instance
	for _, r := range repos {
		rr, err := buildOne(dir, r)
		if err != nil {
			return fmt.Errorf("demobench: %s/%s: %w", Owner, r.name, err)
		}
		rows = append(rows, rr...)
	}
	var buf bytes.Buffer
	if err := swebench.Write(&buf, rows); err != nil {
		return fmt.Errorf("demobench: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, DatasetFile), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("demobench: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, markerFile), []byte(markerText(buf.Bytes())), 0o644); err != nil {
		return fmt.Errorf("demobench: %w", err)
	}
	return nil
}

// buildOne makes one repository and its instances, checking that every instance is consistent with its base.
func buildOne(dir string, r repoSpec) ([]swebench.Instance, error) {
	snaps, err := snapshots(r)
	if err != nil {
		return nil, err
	}
	repo := Owner + "/" + r.name
	hashes, err := buildRepo(RepoDir(dir, repo), r, snaps)
	if err != nil {
		return nil, err
	}
	var rows []swebench.Instance
	for _, in := range r.instances {
		files, err := readInstance(r, in)
		if err != nil {
			return nil, err
		}
		base := snaps[in.base]
		if err := checkInstance(r, in, base, files); err != nil {
			return nil, fmt.Errorf("instance %d: %w", in.n, err)
		}
		id := fmt.Sprintf("%s__%s-%d", Owner, r.name, in.n)
		failToPass, passToPass := testNames(r, in)
		rows = append(rows, swebench.Instance{
			InstanceID:             id,
			Repo:                   repo,
			BaseCommit:             hashes[in.base].String(),
			ProblemStatement:       files.issue,
			Patch:                  patchOf(base, files.fix),
			TestPatch:              patchOf(base, files.test),
			FailToPass:             swebench.TestList(failToPass),
			PassToPass:             swebench.TestList(passToPass),
			Version:                in.version,
			EnvironmentSetupCommit: hashes[in.base].String(),
			CreatedAt:              in.createdAt.Format("2006-01-02T15:04:05Z"),
		})
	}
	return rows, nil
}

// checkInstance verifies what can be verified without running the tests: gold files exist at base, the patches
// apply and give the intended files, the tests named exist where they should: each FAIL_TO_PASS test is added or
// changed by the test patch, each PASS_TO_PASS test exists at base and the test patch leaves it alone.
func checkInstance(r repoSpec, in instanceSpec, base map[string][]byte, f *instanceFiles) error {
	lang := langOf(r)
	if err := checkPatches(lang, base, f); err != nil {
		return err
	}
	if err := checkTests(r, in, lang, base, f); err != nil {
		return err
	}
	if _, p2p := testNames(r, in); len(p2p) < 2 {
		return errors.New("fewer than two PASS_TO_PASS tests as the rows name them")
	}
	if !strings.Contains(f.issue, "**Describe the bug**") || !strings.Contains(f.issue, "**Expected behavior**") {
		return errors.New("problem statement does not follow the bug report template")
	}
	return nil
}

// checkPatches checks that the gold patch touches source files of the base commit and the test patch test files
// only, and that each patch, applied to the base, reproduces its files.
func checkPatches(lang string, base map[string][]byte, f *instanceFiles) error {
	if len(f.fix) == 0 || len(f.test) == 0 {
		return errors.New("no fix or no test files")
	}
	for p := range f.fix {
		if _, ok := base[p]; !ok {
			return fmt.Errorf("gold file %s does not exist at the base commit", p)
		}
		if isTestFile(lang, p) {
			return fmt.Errorf("gold file %s is a test file", p)
		}
	}
	for p := range f.test {
		if !isTestFile(lang, p) {
			return fmt.Errorf("test patch file %s is not a test file", p)
		}
		if _, both := f.fix[p]; both {
			return fmt.Errorf("%s is in both the gold and the test patch", p)
		}
	}
	read := func(p string) ([]byte, bool) { d, ok := base[p]; return d, ok }
	for _, c := range []struct {
		name  string
		patch string
		want  map[string][]byte
	}{{"gold patch", patchOf(base, f.fix), f.fix}, {"test patch", patchOf(base, f.test), f.test}} {
		got, err := diff.ApplyFiles(read, c.patch)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		for p, want := range c.want {
			if !bytes.Equal(got[p], want) {
				return fmt.Errorf("%s does not reproduce %s", c.name, p)
			}
		}
	}
	return nil
}

// checkTests checks that the test patch adds or changes every FAIL_TO_PASS test and leaves the PASS_TO_PASS
// tests, which exist at the base commit, as they are.
func checkTests(r repoSpec, in instanceSpec, lang string, base map[string][]byte, f *instanceFiles) error {
	after := map[string][]byte{}
	for p, d := range base {
		after[p] = d
	}
	for p, d := range f.test {
		after[p] = d
	}
	before, all := testFuncs(lang, base), testFuncs(lang, after)
	for id, n := range all {
		if n > 1 {
			return fmt.Errorf("test %s is declared %d times", id, n)
		}
	}
	changed := func(id string) bool {
		_, fn, _ := strings.Cut(id, "::")
		file := fileOfID(lang, id, after)
		return file != "" && funcBody(lang, "\n"+string(base[file]), fn) != funcBody(lang, "\n"+string(after[file]), fn)
	}
	for _, t := range in.failToPass {
		ids := testIDs(r, t, all)
		touched := false
		for _, id := range ids {
			touched = touched || changed(id)
		}
		if !touched {
			return fmt.Errorf("FAIL_TO_PASS test %s must be added or changed by the test patch", t)
		}
	}
	if len(in.passToPass) < 2 {
		return errors.New("fewer than two PASS_TO_PASS tests")
	}
	for _, t := range in.passToPass {
		ids := testIDs(r, t, before)
		if len(ids) == 0 {
			return fmt.Errorf("PASS_TO_PASS test %s does not exist at the base commit", t)
		}
		for _, id := range ids {
			if changed(id) {
				return fmt.Errorf("PASS_TO_PASS test %s is changed by the test patch", t)
			}
		}
	}
	return nil
}
