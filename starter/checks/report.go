// Package checks holds the checks a sweep's spec is put through before anything runs or is paid (starter check, and
// starter run and starter grade first): per instance, its repository and its grader on this machine; per model,
// its endpoint, id, context window and tokenizer; per method, the services it calls. Each check adds to a Report:
// a problem names what it concerns and its fix, a note says what could not be checked or may go wrong. The commands
// print the report and choose the exit code.
package checks

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"ctxlab/internal/listing"
)

// Problem is one thing that keeps a sweep from finishing: what it concerns (a kind: instance, model, method,
// dataset; and a name), the problem and its fix.
type Problem struct {
	Kind, Name, Text, Fix string
}

// Report collects a check's problems and notes (what it could not check, what may go wrong), and what was checked.
type Report struct {
	Problems []Problem
	Notes    []string
	Checked  []string
}

// Fail adds a problem.
func (r *Report) Fail(kind, name, problem, fix string) {
	r.Problems = append(r.Problems, Problem{Kind: kind, Name: name, Text: problem, Fix: fix})
}

// Note adds a note.
func (r *Report) Note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// maxNamed is how many subjects of one problem a report line names before it only counts the rest.
const maxNamed = 10

// Print writes the report: the notes and, when there is no problem and ready is set (starter check), what was
// checked to out; the problems to errs (one line per problem, the subjects it concerns grouped). It reports whether
// there was no problem.
func (r *Report) Print(out, errs io.Writer, spec string, ready bool) bool {
	for _, n := range r.Notes {
		fmt.Fprintln(out, "starter check: note:", n)
	}
	if len(r.Problems) == 0 {
		if ready {
			fmt.Fprintf(out, "starter check: %s: ready (%s)\n", spec, strings.Join(r.Checked, "; "))
		}
		return true
	}
	groups := r.grouped()
	fmt.Fprintf(errs, "starter check: %s: %d problem(s); nothing was run or paid:\n", spec, len(groups))
	for _, g := range groups {
		subject := g.Kind
		if len(g.names) > 1 {
			subject += "s"
		}
		if len(g.names) > 0 {
			subject += " " + listing.Some(g.names, maxNamed)
		}
		line := "  " + subject + ": " + g.Text
		if g.Fix != "" {
			line += "; fix: " + g.Fix
		}
		fmt.Fprintln(errs, line)
	}
	fmt.Fprintln(errs, "starter check: fix these and run again (starter run --no-check skips the checks)")
	return false
}

// problemGroup is the problems of one kind, text and fix: the subjects they name, in their order.
type problemGroup struct {
	Problem
	names []string
}

func (r *Report) grouped() []*problemGroup {
	var groups []*problemGroup
	for _, p := range r.Problems {
		i := slices.IndexFunc(groups, func(g *problemGroup) bool {
			return g.Kind == p.Kind && g.Text == p.Text && g.Fix == p.Fix
		})
		if i < 0 {
			groups = append(groups, &problemGroup{Problem: Problem{Kind: p.Kind, Text: p.Text, Fix: p.Fix}})
			i = len(groups) - 1
		}
		if p.Name != "" {
			groups[i].names = append(groups[i].names, p.Name)
		}
	}
	return groups
}
