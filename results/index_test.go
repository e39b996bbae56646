package results

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"ctxlab/runfolder"
)

// appendRaw appends bytes to the file as another process's Append would, bypassing this process's key index.
func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func mustAppend(t *testing.T, s Store, want int, rows ...Row) {
	t.Helper()
	n, err := s.Append(rows)
	if err != nil || n != want {
		t.Fatalf("append wrote %d rows, %v; want %d", n, err, want)
	}
}

func wantKeys(t *testing.T, path string, want ...string) {
	t.Helper()
	rows, bad, err := ReadFile(path)
	if err != nil || len(bad) != 0 {
		t.Fatalf("read: %d bad, %v", len(bad), err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.String(FieldInstance))
	}
	if len(got) != len(want) {
		t.Fatalf("file holds %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("file holds %v, want %v", got, want)
		}
	}
}

// Rows another process appended after this one's last Append are read under the lock: they are not written twice.
func TestAppendSeesRowsAnotherProcessAppended(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "results.jsonl")}
	mustAppend(t, s, 1, row("i1", "a", true, 1, 1))
	appendRaw(t, s.Path, rowLine(t, row("i2", "a", true, 1, 1)))
	mustAppend(t, s, 1, row("i2", "a", true, 1, 1), row("i3", "a", true, 1, 1))
	wantKeys(t, s.Path, "i1", "i2", "i3")
}

// A file renamed over the path (a new sweep putting the old rows aside, or another process's Repair) is read anew.
func TestAppendAfterTheFileWasReplaced(t *testing.T) {
	dir := t.TempDir()
	s := Store{Path: filepath.Join(dir, "results.jsonl")}
	mustAppend(t, s, 2, row("i1", "a", true, 1, 1), row("i2", "a", true, 1, 1))
	if err := os.Rename(s.Path, filepath.Join(dir, "aside.jsonl")); err != nil {
		t.Fatal(err)
	}
	// The new sweep's file starts empty: i1 belongs in it again.
	mustAppend(t, s, 1, row("i1", "a", true, 1, 1))
	other := filepath.Join(dir, "other.jsonl")
	if err := os.WriteFile(other, []byte(rowLine(t, row("i5", "a", true, 1, 1))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, s.Path); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, 1, row("i1", "a", true, 1, 1), row("i5", "a", true, 1, 1))
	wantKeys(t, s.Path, "i5", "i1")
}

// A file rewritten in place (same inode, no shorter than what was read) is noticed by its changed bytes.
func TestAppendAfterTheFileWasRewrittenInPlace(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "results.jsonl")}
	mustAppend(t, s, 1, row("i1", "a", true, 1, 1))
	long := rowLine(t, row("i7", "a", true, 1, 1)) + rowLine(t, row("i8", "a", true, 1, 1))
	if err := os.WriteFile(s.Path, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, 1, row("i1", "a", true, 1, 1), row("i8", "a", true, 1, 1))
	wantKeys(t, s.Path, "i7", "i8", "i1")
}

// A torn line another process left after this one's last Append is cut out and kept aside, as on a first Append.
func TestAppendRepairsATornLineLeftSinceItsLastAppend(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "results.jsonl")}
	mustAppend(t, s, 1, row("i1", "a", true, 1, 1))
	whole := rowLine(t, row("i2", "a", true, 1, 1))
	torn := rowLine(t, row("i3", "a", true, 1, 1))
	torn = torn[:len(torn)/2]
	appendRaw(t, s.Path, whole+torn)
	mustAppend(t, s, 1, row("i2", "a", true, 1, 1), row("i3", "a", true, 1, 1))
	wantKeys(t, s.Path, "i1", "i2", "i3")
	if kept, err := os.ReadFile(s.Path + runfolder.TornSuffix); err != nil || string(kept) != torn+"\n" {
		t.Errorf("torn bytes kept = %q, %v", kept, err)
	}
	// A torn line with later rows after it (a file from before Append repaired): cut out by a rewrite.
	appendRaw(t, s.Path, torn+"\n"+rowLine(t, row("i4", "a", true, 1, 1)))
	mustAppend(t, s, 1, row("i4", "a", true, 1, 1), row("i5", "a", true, 1, 1))
	wantKeys(t, s.Path, "i1", "i2", "i3", "i4", "i5")
	// A whole last row that lost only its newline gets it back, and is not written twice.
	last := rowLine(t, row("i6", "a", true, 1, 1))
	appendRaw(t, s.Path, last[:len(last)-1])
	mustAppend(t, s, 1, row("i6", "a", true, 1, 1), row("i7", "a", true, 1, 1))
	wantKeys(t, s.Path, "i1", "i2", "i3", "i4", "i5", "i6", "i7")
}

// TestAppendAcrossProcesses runs appenders in child processes, each with its own key index, sending overlapping
// rows in turns: every key must land in the file exactly once.
func TestAppendAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	const procs, issues = 3, 40
	cmds := make([]*exec.Cmd, procs)
	for p := range cmds {
		cmds[p] = exec.Command(os.Args[0], "-test.run=^TestAppendAcrossProcesses$")
		cmds[p].Env = append(os.Environ(), "RESULTS_TEST_APPENDER="+path, fmt.Sprintf("RESULTS_TEST_SEED=%d", p))
		if err := cmds[p].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("appender %d: %v", p, err)
		}
	}
	rows, bad, err := ReadFile(path)
	if err != nil || len(bad) != 0 {
		t.Fatalf("read: %d bad, %v", len(bad), err)
	}
	count := map[Key]int{}
	for _, r := range rows {
		count[r.Key()]++
	}
	if len(count) != issues*2 || len(rows) != issues*2 {
		t.Fatalf("%d rows with %d keys, want each of %d keys once", len(rows), len(count), issues*2)
	}
}

func init() {
	if path := os.Getenv("RESULTS_TEST_APPENDER"); path != "" {
		appenderChild(path, os.Getenv("RESULTS_TEST_SEED"))
	}
}

// appenderChild is a child process of TestAppendAcrossProcesses: it appends every issue's two rows, each process in its own order, and exits.
func appenderChild(path, seed string) {
	s := Store{Path: path}
	n, _ := strconv.Atoi(seed)
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	for _, issue := range rng.Perm(40) {
		inst := fmt.Sprintf("i%02d", issue)
		if _, err := s.Append([]Row{row(inst, "a", true, 1, 1), row(inst, "b", false, 0, 0)}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(0)
}
