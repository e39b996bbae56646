package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/testkit/e2e"
)

// tearLastRow rewrites a results file as a process killed mid-append leaves it: a row that has no error is moved to
// the end and loses its second half. It returns the key of the torn row.
func tearLastRow(t *testing.T, file string) results.Key { return tearRow(t, file, false) }

// tearRow is tearLastRow for a row with an error (failed) or without.
func tearRow(t *testing.T, file string, failed bool) results.Key {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimRight(b, "\n"), []byte("\n"))
	rows, _, err := results.ReadFile(file)
	if err != nil || len(rows) != len(lines) {
		t.Fatalf("%s: %d rows for %d lines (%v)", file, len(rows), len(lines), err)
	}
	for i, r := range rows {
		if (r[results.FieldError] != nil) != failed {
			continue
		}
		var out []byte
		for j, l := range lines {
			if j != i {
				out = append(out, bytes.TrimRight(l, "\n")...)
				out = append(out, '\n')
			}
		}
		line := bytes.TrimRight(lines[i], "\n")
		out = append(out, line[:len(line)/2]...)
		if err := os.WriteFile(file, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return r.Key()
	}
	t.Fatalf("%s: no row with failed=%v", file, failed)
	return results.Key{}
}

// TestTornResultsRepaired runs a small sweep, then tears the last line of its results.jsonl the way a kill
// mid-append does: predictions, status, report and a re-run of the finished sweep each cut the torn line and bring
// the lost row back, re-derived from the stored node outputs, exactly once and equal to the row the sweep wrote.
func TestTornResultsRepaired(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	spec := demoVariant(t, "{ name: 'torn', dataset+: { limit: 2 }, "+referenceMethods+" }")
	if stdout, stderr, code := runStarter(t, 5*time.Minute, "run", spec, "--runs", runs); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	file := filepath.Join(runs, "torn", "results.jsonl")
	want := readRows(t, file)
	check := func(cmd string, torn results.Key, stderr string) {
		t.Helper()
		for _, msg := range []string{"cut 1 torn line(s)", "re-derived 1 row(s)"} {
			if !strings.Contains(stderr, msg) {
				t.Errorf("%s: stderr lacks %q:\n%s", cmd, msg, stderr)
			}
		}
		got := readRows(t, file) // fails on a torn line or a row written twice
		if len(got) != len(want) {
			t.Errorf("%s: %d rows, want %d", cmd, len(got), len(want))
		}
		for k, w := range want {
			if !reflect.DeepEqual(got[k], w) {
				t.Errorf("%s: row %v = %v, want %v", cmd, k, got[k], w)
			}
		}
		if _, ok := got[torn]; !ok {
			t.Errorf("%s: torn row %v not back", cmd, torn)
		}
	}

	torn := tearLastRow(t, file)
	_, stderr := mainOut(t, "predictions", "torn", "--runs", runs)
	check("predictions", torn, stderr)

	torn = tearLastRow(t, file)
	_, stderr = mainOut(t, "status", "torn", "--runs", runs)
	check("status", torn, stderr)

	torn = tearLastRow(t, file)
	_, stderr = mainOut(t, "report", "torn", "--runs", runs, "--resamples", "200", "--no-figures")
	check("report", torn, stderr)

	torn = tearLastRow(t, file)
	stdout, stderr, code := runStarter(t, 5*time.Minute, "run", spec, "--runs", runs)
	if code != 0 || !strings.Contains(stderr, "already finished") {
		t.Fatalf("re-run: exit %d, want 0 and the finished sweep\n%s\n%s", code, stdout, stderr)
	}
	check("run", torn, stderr)
	if kept, err := os.ReadFile(file + runfolder.TornSuffix); err != nil || bytes.Count(kept, []byte("\n")) != 4 {
		t.Errorf("%s should keep the 4 torn lines cut: %q, %v", file+runfolder.TornSuffix, kept, err)
	}

	// Issue 39: a received run folder whose results.jsonl links to a file elsewhere. Before, status (as root) cut
	// that file's last line and appended the lost row to it; now no command opens the file through the link, and
	// the file linked to is left as it was.
	victim := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	if err := os.Rename(file, victim); err != nil {
		t.Fatal(err)
	}
	tearLastRow(t, victim)
	before, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, file); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status", "torn"}, {"predictions", "torn"}, {"report", "torn", "--no-figures"}} {
		code, stdout, stderr := runMain(append(args, "--runs", runs)...)
		if code == exitOK || !strings.Contains(stderr, file+" is a symbolic link") {
			t.Errorf("%s through a link: exit %d, want a failure naming the link\n%s%s", args[0], code, stdout, stderr)
		}
		if after, _ := os.ReadFile(victim); !bytes.Equal(after, before) {
			t.Fatalf("%s changed the file results.jsonl links to", args[0])
		}
	}
}

// TestTornFailedRowRestoredFromHistory: a lost row whose step failed has no node output to re-derive it from; the
// re-run of the finished sweep takes it from the Record activity in its Issue workflow's history. The broken
// method's rows are bad_input (the spec's empty prompt: a configuration error), which a re-run retries (issue 27):
// the lost row is taken back before the retry replaces the histories, so it is retried with the other, and every
// row is there once, as the sweep wrote it.
func TestTornFailedRowRestoredFromHistory(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	spec := demoVariant(t, brokenVariant)
	if stdout, stderr, code := runStarter(t, 5*time.Minute, "run", spec, "--runs", runs); code != 0 &&
		!strings.Contains(stdout, "broken") {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	file := filepath.Join(runs, "obs", "results.jsonl")
	want := readRows(t, file)
	torn := tearRow(t, file, true)
	summaryFile := filepath.Join(runs, "obs", "summary.md")
	if err := os.Remove(summaryFile); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, r := range want {
		if r[results.FieldError] != nil {
			failed++
		}
	}
	_, stderr, _ := runStarter(t, 5*time.Minute, "run", spec, "--runs", runs)
	retrying := fmt.Sprintf("the sweep had finished with %d row(s) to retry: configuration %d (bad_input %d)", failed,
		failed, failed)
	if !strings.Contains(stderr, retrying) || !strings.Contains(stderr, "re-derived 1 row(s)") {
		t.Errorf("re-run stderr lacks %q (the torn row's with the others) or the re-derived row:\n%s", retrying,
			stderr)
	}
	got := readRows(t, file) // fails on a row written twice
	if len(got) != len(want) || !reflect.DeepEqual(got[torn], want[torn]) {
		t.Errorf("%d rows (want %d); torn row %v = %v, want %v", len(got), len(want), torn, got[torn], want[torn])
	}
	retried := readRows(t, filepath.Join(runs, "obs", runfolder.RetriedFile))
	if _, ok := retried[torn]; !ok || len(retried) != failed {
		t.Errorf("%s: %d rows (want %d), the torn row %v among them: %v", runfolder.RetriedFile, len(retried), failed, torn,
			ok)
	}
	if summary, err := os.ReadFile(summaryFile); err != nil || strings.Contains(string(summary), "could not be read") {
		t.Errorf("summary.md should be written again from the repaired file: %v\n%s", err, summary)
	}
}

// TestRunFolderLinksRefused: a run folder (received from elsewhere) where a file or folder the run writes is a
// symbolic link is refused before anything runs, naming the link, and nothing is written where it points: the rows
// and logs, the locks, the embedded server's database and log, the memo folders.
func TestRunFolderLinksRefused(t *testing.T) {
	t.Parallel()
	spec := demoVariant(t, "{ name: 'lnk', dataset+: { limit: 1 }, "+referenceMethods+" }")
	names := append(slices.Clone(runfolder.Files), runfolder.LogFile, runfolder.StarterLock, runfolder.PrepareLock,
		runfolder.TemporalDB, runfolder.TemporalDB+"-wal", runfolder.TemporalLog)
	for _, name := range append(names, runfolder.Dirs...) {
		runs, outside := t.TempDir(), t.TempDir()
		victim := filepath.Join(outside, "victim")
		if slices.Contains(runfolder.Dirs, name) {
			if err := os.Mkdir(victim, 0o755); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(runs, "lnk", name)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, link); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runStarter(t, 3*time.Minute, "run", spec, "--runs", runs, "--no-check", "--quiet")
		if code == exitOK || !strings.Contains(stderr, link+" is a symbolic link") {
			t.Errorf("%s a link: exit %d, want the run refused naming it\n%s%s", name, code, stdout,
				e2e.Tail(stderr, 2000))
		}
		if st, err := os.Stat(victim); err == nil && st.IsDir() {
			if entries, _ := os.ReadDir(victim); len(entries) != 0 {
				t.Errorf("%s a link: the run wrote %d entries into the folder it points to", name, len(entries))
			}
		} else if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
			t.Errorf("%s a link: the file it points to was written: %q", name, b)
		}
	}
}
