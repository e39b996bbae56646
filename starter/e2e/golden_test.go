package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
)

// update rewrites the demo's golden files from a fresh run instead of comparing with them.
var update = flag.Bool("update", false, "rewrite "+goldenRowsFile+" and "+goldenFigureFile+" from a fresh demo run")

const (
	// goldenRowsFile holds the demo's rows, sorted by instance, method and model, without the fields that measure
	// time: a change that alters any other byte of any row fails TestDemoGolden.
	goldenRowsFile = "testdata/demo-rows.jsonl"
	// goldenFigureFile is the README's figure: `starter report demo`'s resolve_ci.svg, committed.
	goldenFigureFile = "../../docs/img/demo-resolve.svg"
	// regenerate is the one command that rewrites both after an intended change (a new method, a new row field).
	regenerate = "go test ./starter/e2e/ -run TestDemoGolden -update"
)

// timingField reports whether a row field measures time (grade_seconds): it differs between two runs of the same
// code, so the golden rows leave it out.
func timingField(name string) bool {
	return strings.HasSuffix(name, "_seconds") || strings.HasSuffix(name, "_ms")
}

// machineFields differ with the machine rather than the code: grading isolates the tests in namespaces only when the
// worker is root on Linux, as CI is. Off root they are left out of both sides of the comparison.
var machineFields = []string{"grade_isolation"}

// TestDemoGolden runs the demo as a researcher does (`starter run specs/demo.jsonnet`, then `starter report demo`)
// and compares its rows with testdata/demo-rows.jsonl byte for byte (timing fields removed, rows sorted), and its
// resolve-rate figure with the README's docs/img/demo-resolve.svg. With -update it rewrites both instead.
func TestDemoGolden(t *testing.T) {
	runs := t.TempDir()
	stdout, stderr, code := runStarter(t, 10*time.Minute, "run", demoSpec(t), "--runs", runs)
	if code != 0 {
		t.Fatalf("starter run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rows, err := goldenRows(filepath.Join(runs, "demo", "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runStarter(t, 5*time.Minute, "report", "demo", "--runs", runs)
	if code != 0 {
		t.Fatalf("starter report: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	figure, err := os.ReadFile(filepath.Join(runs, "demo", "figures", "resolve_ci.svg"))
	if err != nil {
		t.Fatal(err)
	}

	if *update {
		if err := os.MkdirAll(filepath.Dir(goldenRowsFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenRowsFile, rows, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFigureFile, figure, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s (%d rows) and %s", goldenRowsFile, bytes.Count(rows, []byte("\n")), goldenFigureFile)
		return
	}

	t.Run("rows", func(t *testing.T) {
		want, err := os.ReadFile(goldenRowsFile)
		if err != nil {
			t.Fatalf("%v\nwrite it with: %s", err, regenerate)
		}
		got := rows
		if os.Geteuid() != 0 {
			t.Logf("not root: %v left out of the comparison (the golden rows were taken as root, as CI runs)",
				machineFields)
			if want, err = dropFields(want, machineFields); err != nil {
				t.Fatalf("%s: %v", goldenRowsFile, err)
			}
			if got, err = dropFields(got, machineFields); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the demo's rows differ from %s (- golden, + this run):\n%s\nIf the change is intended, "+
				"regenerate the golden files with:\n  %s", goldenRowsFile, rowsDiff(want, got), regenerate)
		}
	})
	t.Run("figure", func(t *testing.T) {
		want, err := os.ReadFile(goldenFigureFile)
		if err != nil {
			t.Fatalf("%v\nwrite it with: %s", err, regenerate)
		}
		if !bytes.Equal(figure, want) {
			t.Errorf("%s is stale: a fresh `starter report demo` draws another resolve_ci.svg (%s)\nIf the change is "+
				"intended, regenerate the golden files with:\n  %s", goldenFigureFile, firstDifference(want, figure),
				regenerate)
		}
	})
}

// goldenRows reads a results.jsonl and returns its rows in golden form: one JSON object a line with its keys sorted
// and every value as written, timing fields removed, sorted by instance, method and model.
func goldenRows(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type keyed struct {
		key  results.Key
		line []byte
	}
	var rows []keyed
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		var row map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		for name := range row {
			if timingField(name) {
				delete(row, name)
			}
		}
		line, err := json.Marshal(row) // sorts the keys; raw values keep their bytes
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		var k results.Key
		for field, dst := range map[string]*string{results.FieldInstance: &k.Instance, results.FieldMethod: &k.Method,
			results.FieldModel: &k.Model} {
			if err := json.Unmarshal(row[field], dst); err != nil {
				return nil, fmt.Errorf("%s:%d: field %s: %w", path, n, field, err)
			}
		}
		rows = append(rows, keyed{k, line})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	slices.SortFunc(rows, func(a, b keyed) int { return compareKeys(a.key, b.key) })
	var out bytes.Buffer
	for _, r := range rows {
		out.Write(r.line)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

func compareKeys(a, b results.Key) int {
	return strings.Compare(a.Instance+"\x00"+a.Method+"\x00"+a.Model, b.Instance+"\x00"+b.Method+"\x00"+b.Model)
}

// dropFields removes the named fields from every line of golden rows.
func dropFields(rows []byte, fields []string) ([]byte, error) {
	var out bytes.Buffer
	for i, line := range bytes.Split(bytes.TrimSuffix(rows, []byte("\n")), []byte("\n")) {
		var row map[string]json.RawMessage
		if err := json.Unmarshal(line, &row); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		for _, f := range fields {
			delete(row, f)
		}
		b, err := json.Marshal(row)
		if err != nil {
			return nil, err
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// rowsDiff describes how two sets of golden rows differ, row by row and field by field: rows only one side has,
// and for rows both have, each field whose value differs.
func rowsDiff(want, got []byte) string {
	parse := func(b []byte) (map[results.Key]map[string]json.RawMessage, []results.Key) {
		rows := map[results.Key]map[string]json.RawMessage{}
		var order []results.Key
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var row map[string]json.RawMessage
			if json.Unmarshal(line, &row) != nil {
				continue
			}
			var k results.Key
			json.Unmarshal(row[results.FieldInstance], &k.Instance)
			json.Unmarshal(row[results.FieldMethod], &k.Method)
			json.Unmarshal(row[results.FieldModel], &k.Model)
			if _, seen := rows[k]; !seen {
				order = append(order, k)
			}
			rows[k] = row
		}
		return rows, order
	}
	wantRows, wantOrder := parse(want)
	gotRows, gotOrder := parse(got)
	keys := slices.Clone(wantOrder)
	for _, k := range gotOrder {
		if _, ok := wantRows[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)

	var lines []string
	for _, k := range keys {
		label := k.Instance + " " + k.Method + " " + k.Model
		w, inWant := wantRows[k]
		g, inGot := gotRows[k]
		switch {
		case !inGot:
			lines = append(lines, "- row "+label)
		case !inWant:
			lines = append(lines, "+ row "+label)
		default:
			fields := map[string]bool{}
			for f := range w {
				fields[f] = true
			}
			for f := range g {
				fields[f] = true
			}
			for _, f := range slices.Sorted(maps.Keys(fields)) {
				wv, gv := string(w[f]), string(g[f])
				if wv == gv {
					continue
				}
				lines = append(lines, fmt.Sprintf("  %s: %s: - %s + %s", label, f, orAbsent(wv), orAbsent(gv)))
			}
		}
	}
	if len(lines) == 0 {
		return "  (the same rows and fields; the bytes differ in order or spacing)"
	}
	const maxLines = 60
	if len(lines) > maxLines {
		lines = append(lines[:maxLines], fmt.Sprintf("  ... and %d more differences", len(lines)-maxLines))
	}
	return strings.Join(lines, "\n")
}

func orAbsent(v string) string {
	if v == "" {
		return "(absent)"
	}
	if len(v) > 120 {
		return v[:120] + "..."
	}
	return v
}

// firstDifference names the first line at which two texts differ.
func firstDifference(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("first difference at line %d: committed %q, fresh %q", i+1, clip(w), clip(g))
		}
	}
	return fmt.Sprintf("%d bytes committed, %d fresh", len(want), len(got))
}

func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}
