package runfolder

import (
	"os"
	"path/filepath"
	"testing"
)

func TestNodeMemoNamesEveryInstanceAsOneFile(t *testing.T) {
	dir := t.TempDir()
	if got, want := NodeMemo(dir, "django__django-1", "grade-0123"), filepath.Join(dir, "nodes", "django__django-1",
		"grade-0123.json"); got != want {
		t.Errorf("NodeMemo = %s, want %s", got, want)
	}
	if got := NodeMemo(dir, "../x", "n"); filepath.Dir(filepath.Dir(got)) != Nodes(dir) {
		t.Errorf("NodeMemo of an instance id with a slash left nodes/: %s", got)
	}
}

func TestPutAsideMovesRowsAndSummary(t *testing.T) {
	dir := t.TempDir()
	hash := "0123456789abcdef0123"
	if dest, err := PutAside(dir, hash); err != nil || dest != "" {
		t.Fatalf("PutAside of an empty folder = %q, %v; want nothing moved", dest, err)
	}
	for _, p := range []string{Rows(dir), Summary(dir)} {
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dest, err := PutAside(dir, hash)
	if err != nil || dest != filepath.Join(dir, "previous", hash[:12]) {
		t.Fatalf("PutAside = %q, %v", dest, err)
	}
	for _, name := range []string{RowsFile, SummaryFile} {
		if _, err := os.Stat(filepath.Join(dest, name)); err != nil {
			t.Errorf("%s not put aside: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s still in the run folder", name)
		}
	}
}
