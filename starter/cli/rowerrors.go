package cli

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"ctxlab/activities/llm"
	"ctxlab/results"
	"ctxlab/workflows"
)

// rowErrorTally counts a sweep's rows with an error, by kind of error and by whose failure it is (llm.ClassOf).
type rowErrorTally struct {
	Rows    int
	Errors  int
	Kinds   map[string]int
	Classes map[llm.Class]int
	// ClassKinds counts each class's kinds.
	ClassKinds map[llm.Class]map[string]int
}

// tallyRowErrors counts the rows with an error, each (instance, method, model) once (its last row counts).
func tallyRowErrors(rows []results.Row) rowErrorTally {
	last := map[results.Key]results.Row{}
	for _, r := range rows {
		last[r.Key()] = r
	}
	t := rowErrorTally{Rows: len(last), Kinds: map[string]int{}, Classes: map[llm.Class]int{},
		ClassKinds: map[llm.Class]map[string]int{}}
	for _, r := range last {
		if r[results.FieldError] == nil {
			continue
		}
		kind := errorKind(r)
		class := llm.ClassOf(kind)
		t.Errors++
		t.Kinds[kind]++
		t.Classes[class]++
		if t.ClassKinds[class] == nil {
			t.ClassKinds[class] = map[string]int{}
		}
		t.ClassKinds[class][kind]++
	}
	return t
}

// byClass says how many rows failed for each class of reason, with their kinds, and what a re-run does with them:
// "infrastructure 2 (rate_limit 2; a re-run retries them), model 1 (context_length 1; final)".
func (t rowErrorTally) byClass() string {
	var parts []string
	for _, c := range []llm.Class{llm.ClassInfrastructure, llm.ClassConfiguration, llm.ClassModel} {
		if t.Classes[c] == 0 {
			continue
		}
		what := "final"
		if c.RetriedOnRerun() {
			what = "a re-run retries them"
		}
		parts = append(parts, fmt.Sprintf("%s %d (%s; %s)", c, t.Classes[c],
			rowErrorTally{Kinds: t.ClassKinds[c]}.String(), what))
	}
	return strings.Join(parts, ", ")
}

// retryOnRerun is whether a re-run of a finished sweep runs a row again: its error is the infrastructure's or the
// configuration's, not the model's.
func retryOnRerun(r results.Row) bool {
	return r[results.FieldError] != nil && llm.ClassOf(errorKind(r)).RetriedOnRerun()
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
const errorKindField = workflows.ErrorKindField

var (
	modelCallKind = regexp.MustCompile(`model call failed \(([a-z_]+)`)
	failedStep    = regexp.MustCompile(`^step ([^:\s]+):`)
)

// errorKind names what kind of failure a row's error is: the row's error_kind when it has one, else (rows recorded
// before error_kind) the model call's failure kind (auth, quota, context_length, ...) found in the message,
// "timeout", or the failing step.
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
