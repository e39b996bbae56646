package swebench

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

const good = `{"instance_id":"o__r-1","repo":"o/r","base_commit":"abc","problem_statement":"p","patch":"d","test_patch":"t","FAIL_TO_PASS":"[\"TestA\"]","PASS_TO_PASS":["TestB"]}`

func TestReadBothTestListForms(t *testing.T) {
	rows, err := Read(strings.NewReader(good+"\n\n"), "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].FailToPass[0] != "TestA" || rows[0].PassToPass[0] != "TestB" {
		t.Fatalf("rows = %+v", rows)
	}
	var buf bytes.Buffer
	if err := Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"FAIL_TO_PASS":"[\"TestA\"]"`) {
		t.Errorf("not written in SWE-bench's string form: %s", buf.String())
	}
	again, err := Read(&buf, "y")
	if err != nil || again[0].PassToPass[0] != "TestB" {
		t.Fatalf("round trip: %v %+v", err, again)
	}
}

func TestReadNamesTheBadRow(t *testing.T) {
	missing := strings.Replace(good, `"base_commit":"abc",`, "", 1)
	missing = strings.Replace(missing, "o__r-1", "o__r-2", 1)
	for _, tc := range []struct {
		name, input, want string
	}{
		{"missing field", good + "\n" + missing + "\n", "x.jsonl:2 (instance o__r-2): row lacks required fields: base_commit"},
		{"not json", good + "\n{oops\n", "x.jsonl:2: not a JSON object"},
		{"duplicate", good + "\n" + good + "\n", "x.jsonl:2 (instance o__r-1): instance_id repeats the row on line 1"},
		{"bad test list", strings.Replace(good, `"[\"TestA\"]"`, `"TestA"`, 1), "x.jsonl:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.input), "x.jsonl")
			var re *RowError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
	if _, err := Read(strings.NewReader("\n"), "e"); err == nil {
		t.Error("empty dataset accepted")
	}
}
