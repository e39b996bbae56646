package swebench

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
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

// hfRow is a SWE-bench row as Hugging Face's parquet export lays it out: test lists as JSON-encoded strings, plus a
// field ctxlab does not know.
type hfRow struct {
	InstanceID       string  `parquet:"instance_id"`
	Repo             string  `parquet:"repo"`
	BaseCommit       string  `parquet:"base_commit"`
	ProblemStatement string  `parquet:"problem_statement"`
	Patch            string  `parquet:"patch"`
	TestPatch        string  `parquet:"test_patch"`
	FailToPass       string  `parquet:"FAIL_TO_PASS"`
	PassToPass       *string `parquet:"PASS_TO_PASS,optional"`
	Version          string  `parquet:"version"`
	ImageName        string  `parquet:"image_name"`
}

// rebenchRow lays the test lists out as parquet LIST columns, as SWE-rebench does, every column nullable as pyarrow
// writes them, and lacks the optional fields.
type rebenchRow struct {
	InstanceID       string   `parquet:"instance_id,optional"`
	Repo             string   `parquet:"repo,optional"`
	BaseCommit       string   `parquet:"base_commit,optional"`
	ProblemStatement string   `parquet:"problem_statement,optional"`
	Patch            string   `parquet:"patch,optional"`
	TestPatch        string   `parquet:"test_patch,optional"`
	FailToPass       []string `parquet:"FAIL_TO_PASS,optional,list"`
	PassToPass       []string `parquet:"PASS_TO_PASS,optional,list"`
}

func writeParquet[T any](t *testing.T, path string, rows []T) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadParquetLayouts(t *testing.T) {
	dir := t.TempDir()
	p2p := `["TestB"]`
	hf := []hfRow{
		{InstanceID: "o__r-1", Repo: "o/r", BaseCommit: "abc", ProblemStatement: "p", Patch: "d", TestPatch: "t",
			FailToPass: `["TestA"]`, PassToPass: &p2p, Version: "1.0", ImageName: "ignored"},
		{InstanceID: "o__r-2", Repo: "o/r", BaseCommit: "abd", ProblemStatement: "q", Patch: "d2", TestPatch: "t2",
			FailToPass: `["TestC","TestD"]`},
	}
	file := filepath.Join(dir, "hf", "data", "test-00000-of-00001.parquet")
	writeParquet(t, file, hf)
	for _, path := range []string{file, filepath.Dir(file), filepath.Dir(filepath.Dir(file))} {
		rows, err := ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(rows) != 2 || rows[0].InstanceID != "o__r-1" || !slices.Equal(rows[0].FailToPass, []string{"TestA"}) ||
			!slices.Equal(rows[0].PassToPass, []string{"TestB"}) || rows[0].Version != "1.0" ||
			!slices.Equal(rows[1].FailToPass, []string{"TestC", "TestD"}) || rows[1].PassToPass != nil {
			t.Errorf("%s: rows = %+v", path, rows)
		}
	}

	// A folder of shards, test lists as parquet lists.
	shards := filepath.Join(dir, "rebench")
	writeParquet(t, filepath.Join(shards, "test-00000-of-00002.parquet"), []rebenchRow{{InstanceID: "a__b-1", Repo: "a/b",
		BaseCommit: "c1", ProblemStatement: "p", Patch: "d", TestPatch: "t", FailToPass: []string{"t1", "t2"}}})
	writeParquet(t, filepath.Join(shards, "test-00001-of-00002.parquet"), []rebenchRow{{InstanceID: "a__b-2", Repo: "a/b",
		BaseCommit: "c2", ProblemStatement: "p", Patch: "d", TestPatch: "t", FailToPass: []string{"t3"}, PassToPass: []string{"t4"}}})
	rows, err := ReadFile(shards)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || !slices.Equal(rows[0].FailToPass, []string{"t1", "t2"}) || rows[1].InstanceID != "a__b-2" ||
		!slices.Equal(rows[1].PassToPass, []string{"t4"}) {
		t.Errorf("shards: %+v", rows)
	}
	// The same instance in two shards is named with both places.
	writeParquet(t, filepath.Join(shards, "test-00001-of-00002.parquet"), []rebenchRow{{InstanceID: "a__b-1", Repo: "a/b",
		BaseCommit: "c2", ProblemStatement: "p", Patch: "d", TestPatch: "t", FailToPass: []string{"t3"}}})
	if _, err := ReadFile(shards); err == nil || !strings.Contains(err.Error(), "test-00001-of-00002.parquet: row 1 (instance a__b-1)") ||
		!strings.Contains(err.Error(), "row 1 of") {
		t.Errorf("duplicate across shards: %v", err)
	}
	// Two splits in one folder are refused rather than merged.
	writeParquet(t, filepath.Join(shards, "dev-00000-of-00001.parquet"), hf[:1])
	if _, err := ReadFile(shards); err == nil || !strings.Contains(err.Error(), "dev, test") {
		t.Errorf("two splits: %v", err)
	}

	// A row at fault is named by file, row and field.
	bad := hf[1]
	bad.FailToPass = "TestC"
	badFile := filepath.Join(dir, "bad.parquet")
	writeParquet(t, badFile, []hfRow{hf[0], bad})
	if _, err := ReadFile(badFile); err == nil || !strings.Contains(err.Error(), "bad.parquet: row 2 (instance o__r-2): field FAIL_TO_PASS") {
		t.Errorf("bad row: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.parquet"), []byte("PAR1 not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(filepath.Join(dir, "junk.parquet")); err == nil || !strings.Contains(err.Error(), "junk.parquet") {
		t.Errorf("junk: %v", err)
	}
}

func TestReadJSONListAndFieldErrors(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "d.json")
	second := strings.Replace(strings.Replace(good, "o__r-1", "o__r-2", 1), `"patch":"d",`, `"patch":"d","extra":{"x":1},"version":null,`, 1)
	if err := os.WriteFile(list, []byte("[\n"+good+",\n"+second+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadFile(list)
	if err != nil || len(rows) != 2 || rows[1].InstanceID != "o__r-2" || rows[1].Version != "" {
		t.Fatalf("json list: %v %+v", err, rows)
	}
	wrongType := strings.Replace(good, `"repo":"o/r"`, `"repo":["o/r"]`, 1)
	for _, tc := range []struct{ name, input, want string }{
		{"jsonl field", good + "\n" + strings.Replace(wrongType, "o__r-1", "o__r-3", 1) + "\n", "x:2 (instance o__r-3): field repo: want a string"},
		{"list field", "[" + wrongType + "]", "x: row 1 (instance o__r-1): field repo"},
		{"list not object", "[1]", "x: row 1: not a JSON object"},
		{"unknown format", `{"id":1}`, "x:1: neither a SWE-bench row"},
	} {
		if _, err := Read(strings.NewReader(tc.input), "x"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestRepoNamesAreOwnerSlashName is issue 39's seventh defect: a row whose repo was "../victim" filled a repos
// template with a path outside its folder, and the checkout snapshotted that repository and sent its files to the
// model. A repo is owner/name, each part of letters, digits, '.', '_' and '-' (not "." or "..", not starting with
// '-'); any other is the row's error, naming the file, line and field. Multi-SWE-bench's org and repo are held to the
// same rule.
func TestRepoNamesAreOwnerSlashName(t *testing.T) {
	for _, bad := range []string{"../victim", "../../srv/secret", "acme/../../x", "acme/..", "./acme", "acme/x/y",
		"acme/", "/abs", "solo", "-u/x", "acme/-x", "a b/c", "acme\\..\\x", "acme/x\n", "acme/" + strings.Repeat("x", 200)} {
		row := strings.Replace(good, `"repo":"o/r"`, `"repo":`+quote(bad), 1)
		_, err := Read(strings.NewReader(row+"\n"), "data.jsonl")
		var re *RowError
		if !errors.As(err, &re) || re.Field != "repo" || re.Line != 1 || !strings.Contains(err.Error(), "owner/name") {
			t.Errorf("repo %q: %v, want the row's error naming its field", bad, err)
		}
	}
	multi := `{"org":"..","repo":"victim","number":1,"fix_patch":"d","test_patch":"t","problem_statement":"p","base":{"sha":"abc"},"f2p_tests":{"a":{}}}`
	if _, err := Read(strings.NewReader(multi+"\n"), "multi.jsonl"); err == nil || !strings.Contains(err.Error(), "owner/name") {
		t.Errorf("a Multi-SWE-bench row of org '..': %v", err)
	}
	for _, ok := range []string{"o/r", "django/django", "psf/requests", "octo-org/.github", "a_b/c.d-e"} {
		row := strings.Replace(good, `"repo":"o/r"`, `"repo":`+quote(ok), 1)
		if _, err := Read(strings.NewReader(row+"\n"), "data.jsonl"); err != nil {
			t.Errorf("repo %q refused: %v", ok, err)
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
