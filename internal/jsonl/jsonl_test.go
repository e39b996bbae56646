package jsonl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type rec struct {
	A int `json:"a"`
}

func TestScanPartialLastLine(t *testing.T) {
	text := "{\"a\":1}\n\n  \n{\"a\":2}\r\n{\"a\":"
	var nums []int
	var lines []string
	n, err := Scan(strings.NewReader(text), LeavePartial, func(num int, line []byte) error {
		nums, lines = append(nums, num), append(lines, string(line))
		return nil
	})
	if err != nil || n != int64(strings.LastIndexByte(text, '\n')+1) {
		t.Fatalf("LeavePartial consumed %d, %v; want up to the last newline", n, err)
	}
	if len(lines) != 2 || lines[0] != `{"a":1}` || lines[1] != `{"a":2}` || nums[0] != 1 || nums[1] != 4 {
		t.Fatalf("lines %q numbers %v", lines, nums)
	}
	got, n, err := Decode[rec](strings.NewReader(text), ReadPartial, func(num int, err error) {
		nums = append(nums, -num)
	})
	if err != nil || n != int64(len(text)) || len(got) != 2 || got[1].A != 2 || nums[len(nums)-1] != -5 {
		t.Fatalf("ReadPartial: %+v consumed %d, %v; bad numbers %v", got, n, err, nums)
	}
}

func TestReadFileAndTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	if got, bad, err := ReadFile[rec](path); err != nil || bad != 0 || got != nil {
		t.Fatalf("missing file: %v %d %v", got, bad, err)
	}
	if err := os.WriteFile(path, []byte("{\"a\":1}\nnot json\n{\"a\":2}\n{\"a"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, bad, err := ReadFile[rec](path)
	if err != nil || bad != 2 || len(got) != 2 {
		t.Fatalf("read %+v, %d bad, %v; want 2 records and the junk and torn lines counted", got, bad, err)
	}
	tail := Tail[rec]{Path: path}
	if got, err := tail.Next(); err != nil || len(got) != 2 || tail.Bad != 1 {
		t.Fatalf("tail %+v bad %d %v", got, tail.Bad, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("\":3}\n")
	if got, err := tail.Next(); err != nil || len(got) != 1 || got[0].A != 3 {
		t.Fatalf("the finished line: %+v %v", got, err)
	}
}
