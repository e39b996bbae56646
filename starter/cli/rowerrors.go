package cli

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"ctxlab/results"
)

// rowErrorTally counts a sweep's rows with an error, by kind of error.
type rowErrorTally struct {
	Rows   int
	Errors int
	Kinds  map[string]int
}

// tallyRowErrors counts the rows with an error, each (instance, method, model) once (its last row counts).
func tallyRowErrors(rows []results.Row) rowErrorTally {
	last := map[results.Key]results.Row{}
	for _, r := range rows {
		last[r.Key()] = r
	}
	t := rowErrorTally{Rows: len(last), Kinds: map[string]int{}}
	for _, r := range last {
		if r[results.FieldError] == nil {
			continue
		}
		t.Errors++
		t.Kinds[errorKind(r)]++
	}
	return t
}

// String lists the kinds, most frequent first: "auth 3, step patch 1".
func (t rowErrorTally) String() string {
	kinds := slices.SortedFunc(maps.Keys(t.Kinds), func(a, b string) int {
		if t.Kinds[a] != t.Kinds[b] {
			return t.Kinds[b] - t.Kinds[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, t.Kinds[k])
	}
	return strings.Join(parts, ", ")
}

// errorKindField is a row's error kind, when the workflow records one.
const errorKindField = "error_kind"

var (
	modelCallKind = regexp.MustCompile(`model call failed \(([a-z_]+)`)
	failedStep    = regexp.MustCompile(`^step ([^:\s]+):`)
)

// errorKind names what kind of failure a row's error is: the row's error_kind when it has one, else the model
// call's failure kind (auth, quota, context_length, ...) found in the message, "timeout", or the failing step.
func errorKind(r results.Row) string {
	if k := r.String(errorKindField); k != "" {
		return k
	}
	msg := fmt.Sprint(r[results.FieldError])
	if m := modelCallKind.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	if strings.Contains(msg, "timed out (") {
		return "timeout"
	}
	if m := failedStep.FindStringSubmatch(msg); m != nil {
		return "step " + m[1]
	}
	return "other"
}
