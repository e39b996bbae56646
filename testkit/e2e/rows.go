package e2e

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"ctxlab/results"
)

// ReadRows returns the rows of a results file keyed by (instance, method, model), without the fields in drop (those
// that measure time, say). An unreadable file or line fails the test; a row written twice is an error.
func ReadRows(t testing.TB, path string, drop ...string) map[results.Key]results.Row {
	t.Helper()
	rows, twice, err := rowsByKey(path, drop)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range twice {
		t.Errorf("%s: row %v written twice", path, k)
	}
	return rows
}

// LoadRows is ReadRows for a caller that reports the error itself: an unreadable line or a row written twice is
// one.
func LoadRows(path string) (map[results.Key]results.Row, error) {
	rows, twice, err := rowsByKey(path, nil)
	if err == nil && len(twice) > 0 {
		err = fmt.Errorf("%s: row %v written twice", path, twice[0])
	}
	return rows, err
}

func rowsByKey(path string, drop []string) (rows map[results.Key]results.Row, twice []results.Key, err error) {
	list, bad, err := results.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if len(bad) > 0 {
		return nil, nil, fmt.Errorf("%s has unreadable lines: %+v", path, bad)
	}
	rows = map[results.Key]results.Row{}
	for _, r := range list {
		if _, dup := rows[r.Key()]; dup {
			twice = append(twice, r.Key())
		}
		for _, f := range drop {
			delete(r, f)
		}
		rows[r.Key()] = r
	}
	return rows, twice, nil
}

// RowCount is the number of rows a results file holds so far; 0 when there is none yet.
func RowCount(path string) int {
	rows, _, _ := results.ReadFile(path)
	return len(rows)
}

// SameRows reports every difference between a faulted run's rows (got) and an uninterrupted run's (want): rows
// missing or extra, and every field but those in varying (fields that legitimately differ between runs).
func SameRows(t testing.TB, got, want map[results.Key]results.Row, varying ...string) {
	t.Helper()
	skip := map[string]bool{}
	for _, f := range varying {
		skip[f] = true
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("row %v missing", k)
			continue
		}
		for _, f := range fieldUnion(g, w) {
			if !skip[f] && !reflect.DeepEqual(g[f], w[f]) {
				t.Errorf("row %v: %s = %v, uninterrupted run %v", k, f, g[f], w[f])
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("row %v is not in the uninterrupted run", k)
		}
	}
}

// fieldUnion is the fields of a and b, sorted.
func fieldUnion(a, b results.Row) []string {
	seen := map[string]bool{}
	for f := range a {
		seen[f] = true
	}
	for f := range b {
		seen[f] = true
	}
	out := make([]string, 0, len(seen))
	for f := range seen {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}
