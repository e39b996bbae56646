package sweepclient

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"ctxlab/activities/api/errkind"
	"ctxlab/results"
)

// RowErrorTally counts a sweep's rows with an error, by kind of error and by whose failure it is
// (results.ErrorKind, results.ErrorClass).
type RowErrorTally struct {
	Rows    int
	Errors  int
	Kinds   map[string]int
	Classes map[errkind.Class]int
	// ClassKinds counts each class's kinds.
	ClassKinds map[errkind.Class]map[string]int
}

// TallyRowErrors counts the rows with an error, each (instance, method, model) once (its last row counts).
func TallyRowErrors(rows []results.Row) RowErrorTally {
	last := map[results.Key]results.Row{}
	for _, r := range rows {
		last[r.Key()] = r
	}
	t := RowErrorTally{Rows: len(last), Kinds: map[string]int{}, Classes: map[errkind.Class]int{},
		ClassKinds: map[errkind.Class]map[string]int{}}
	for _, r := range last {
		if r[results.FieldError] == nil {
			continue
		}
		t.add(r)
	}
	return t
}

func (t *RowErrorTally) add(r results.Row) {
	kind, class := results.ErrorKind(r), results.ErrorClass(r)
	t.Errors++
	t.Kinds[kind]++
	t.Classes[class]++
	if t.ClassKinds[class] == nil {
		t.ClassKinds[class] = map[string]int{}
	}
	t.ClassKinds[class][kind]++
}

// ByClass says how many rows failed for each class of reason, with their kinds, and what a plain re-run does with
// them: "endpoint 2 (rate_limit 2; a re-run retries them), model 1 (context_length 1; final)".
func (t RowErrorTally) ByClass() string {
	var parts []string
	for _, c := range errkind.Classes() {
		if t.Classes[c] == 0 {
			continue
		}
		what := "final"
		if c.RetriedOnRerun() {
			what = "a re-run retries them"
		}
		parts = append(parts, fmt.Sprintf("%s %d (%s; %s)", c, t.Classes[c],
			RowErrorTally{Kinds: t.ClassKinds[c]}.String(), what))
	}
	return strings.Join(parts, ", ")
}

// classes lists the classes and their kinds without saying what a re-run does: "environment 9 (missing_runner 9)".
func (t RowErrorTally) classes() string {
	var parts []string
	for _, c := range errkind.Classes() {
		if t.Classes[c] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%s)", c, t.Classes[c], RowErrorTally{Kinds: t.ClassKinds[c]}))
		}
	}
	return strings.Join(parts, ", ")
}

// RetrySelection is which failed rows a re-run of a finished sweep runs again: those a plain re-run retries (every
// class but the model's), and those of the kinds and classes --retry names.
type RetrySelection []string

// ParseRetry checks --retry's values: each a kind (errkind.Kinds) or a class.
func ParseRetry(values []string) (RetrySelection, error) {
	var sel RetrySelection
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			_, isClass := errkind.ParseClass(strings.ToLower(s))
			if _, isKind := errkind.OfType(s); !isClass && !isKind && s != string(errkind.LostWorker) {
				return nil, fmt.Errorf("--retry %q is neither a class (%s) nor a kind (%s)", s,
					joinNames(errkind.Classes()), joinNames(errkind.Kinds()))
			}
			sel = append(sel, s)
		}
	}
	return sel, nil
}

func joinNames[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}

// retries reports whether a re-run of a finished sweep runs a row again: it has an error that is not the model's,
// or one --retry names.
func (sel RetrySelection) retries(r results.Row) bool {
	if r[results.FieldError] == nil {
		return false
	}
	if results.ErrorClass(r).RetriedOnRerun() {
		return true
	}
	kind := results.ErrorKind(r)
	return slices.ContainsFunc(sel, func(s string) bool { return errkind.Matches(kind, s) })
}

// String lists the kinds, most frequent first: "auth 3, step patch 1".
func (t RowErrorTally) String() string {
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
