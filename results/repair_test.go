package results

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/internal/regularfile"
	"ctxlab/runfolder"
)

func rowLine(t *testing.T, r Row) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func TestRepairCutsTornTail(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "results.jsonl")}
	whole := rowLine(t, row("i1", "a", true, 1, 10)) + rowLine(t, row("i2", "a", false, 0, 0))
	torn := rowLine(t, row("i3", "a", true, 1, 5))
	torn = torn[:len(torn)/2] // killed mid-append
	if err := os.WriteFile(s.Path, []byte(whole+torn), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, bad, _ := ReadFile(s.Path); len(bad) != 1 {
		t.Fatalf("setup: want one bad line, got %d", len(bad))
	}
	rep, err := s.Repair()
	if err != nil {
		t.Fatal(err)
	}
	if rep.TornLines != 1 || rep.TornBytes != len(torn) || rep.SavedTo != s.Path+runfolder.TornSuffix {
		t.Errorf("repaired = %+v", rep)
	}
	b, _ := os.ReadFile(s.Path)
	if string(b) != whole {
		t.Errorf("file after repair = %q, want the two whole rows", b)
	}
	if kept, _ := os.ReadFile(rep.SavedTo); string(kept) != torn+"\n" {
		t.Errorf("kept %q, want %q", kept, torn+"\n")
	}
	// A second repair finds nothing; appending the lost row writes it once.
	if rep, err := s.Repair(); err != nil || rep.Changed() {
		t.Errorf("second repair = %+v, %v", rep, err)
	}
	if n, err := s.Append([]Row{row("i1", "a", true, 1, 10), row("i3", "a", true, 1, 5)}); err != nil || n != 1 {
		t.Errorf("append = %d, %v; want 1 (only i3)", n, err)
	}
	rows, bad, err := ReadFile(s.Path)
	if err != nil || len(bad) != 0 || len(rows) != 3 {
		t.Errorf("read %d rows, %d bad, %v", len(rows), len(bad), err)
	}
}

func TestRepairKeepsWholeLines(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "results.jsonl")}
	first := rowLine(t, row("i1", "a", true, 1, 10))
	// A hand-edited line that is not JSON stays for readers to report; a whole last row missing only its
	// newline stays and gets one.
	last := strings.TrimSuffix(rowLine(t, row("i2", "a", true, 1, 10)), "\n")
	content := first + "not json at all\n" + last
	if err := os.WriteFile(s.Path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Repair()
	if err != nil || rep.Changed() {
		t.Fatalf("repair = %+v, %v; want nothing cut", rep, err)
	}
	b, _ := os.ReadFile(s.Path)
	if string(b) != content+"\n" {
		t.Errorf("file = %q", b)
	}
	if _, err := os.Stat(s.Path + runfolder.TornSuffix); !os.IsNotExist(err) {
		t.Errorf("nothing was cut, yet %s exists (%v)", s.Path+runfolder.TornSuffix, err)
	}
}

// Before Append repaired the tail itself, it wrote new rows on a fresh line after a torn one: the torn line then
// sits in the middle of the file and every reader stumbles on it.
func TestRepairCutsTornLineBuriedByOldAppend(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "results.jsonl")}
	a, c := rowLine(t, row("i1", "a", true, 1, 10)), rowLine(t, row("i3", "a", true, 1, 10))
	torn := `{"instance_id":"i2","method":"a","mo`
	if err := os.WriteFile(s.Path, []byte(a+torn+"\n"+c), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Repair()
	if err != nil || rep.TornLines != 1 {
		t.Fatalf("repair = %+v, %v", rep, err)
	}
	b, _ := os.ReadFile(s.Path)
	if string(b) != a+c {
		t.Errorf("file = %q, want %q", b, a+c)
	}
	if n, err := s.Append([]Row{row("i4", "a", true, 1, 1)}); err != nil || n != 1 {
		t.Errorf("append after replace = %d, %v", n, err)
	}
	if rows, bad, _ := ReadFile(s.Path); len(rows) != 3 || len(bad) != 0 {
		t.Errorf("rows %d, bad %d", len(rows), len(bad))
	}
}

func TestRepairMissingFile(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "results.jsonl")}
	if rep, err := s.Repair(); err != nil || rep.Changed() {
		t.Errorf("repair = %+v, %v", rep, err)
	}
	if _, err := os.Stat(s.Path); !os.IsNotExist(err) {
		t.Errorf("repair created the file: %v", err)
	}
}

// TestNoResultsFileThroughALink is issue 39's eighth defect: a received run folder whose results.jsonl is a
// symbolic link to another file made the torn-line repair (starter status, as root) cut that file's last line and
// append rows to it. A link is refused by every way the store opens the file (repair, append, remove, read), and
// so is a link at the .torn file the repair keeps cut lines in; the file linked to is left as it was.
func TestNoResultsFileThroughALink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim.conf")
	content := "root:x:0:0\n" + `{"not":"finished`
	if err := os.WriteFile(victim, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	s := Store{Path: filepath.Join(dir, "results.jsonl")}
	if err := os.Symlink(victim, s.Path); err != nil {
		t.Fatal(err)
	}
	_, err := s.Repair()
	wantLinkRefused(t, "repair", err)
	_, err = s.Append([]Row{row("i1", "a", true, 1, 10)})
	wantLinkRefused(t, "append", err)
	_, err = s.Remove(func(Row) bool { return true })
	wantLinkRefused(t, "remove", err)
	_, _, err = ReadFile(s.Path)
	wantLinkRefused(t, "read", err)
	if b, _ := os.ReadFile(victim); string(b) != content {
		t.Errorf("the file linked to was changed: %q", b)
	}

	// The rows file itself is whole and torn, but the file the cut lines are kept in links elsewhere.
	for _, p := range []string{s.Path, s.Path + runfolder.TornSuffix} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	torn := rowLine(t, row("i1", "a", true, 1, 10)) + `{"instance_id":"i2"`
	if err := os.WriteFile(s.Path, []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, s.Path+runfolder.TornSuffix); err != nil {
		t.Fatal(err)
	}
	_, err = s.Repair()
	wantLinkRefused(t, "repair keeping torn lines", err)
	if b, _ := os.ReadFile(victim); string(b) != content {
		t.Errorf("the file linked to was changed: %q", b)
	}
}

func wantLinkRefused(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, regularfile.ErrNotAFile) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("%s through a link: %v, want it refused as a symbolic link", what, err)
	}
}
