package results

import (
	"maps"
	"testing"

	"ctxlab/activities/api/errkind"
)

// TestErrorKindAndClass: a row's kind is its error_kind, else what its message says (rows of older versions); its
// class follows from the kind by today's rules (a recorded class counts only for a kind this version does not
// know); rows without an error have neither.
func TestErrorKindAndClass(t *testing.T) {
	for _, c := range []struct {
		row        Row
		kind       string
		class      errkind.Class
		withFields bool
	}{
		{Row{FieldError: nil}, "", "", false},
		{Row{FieldError: "step grade: no python3", FieldErrorKind: "missing_runner"}, "missing_runner", errkind.Environment, true},
		{Row{FieldError: "step patch: m: model call failed (context_length, HTTP 400): too long"}, "context_length", errkind.Model, true},
		{Row{FieldError: "step patch: m: model call failed (auth, HTTP 401): bad key"}, "auth", errkind.Configuration, true},
		{Row{FieldError: "step localize0: timed out (StartToClose)"}, "timeout", errkind.Endpoint, true},
		{Row{FieldError: "step grade: instance a: no python3 that can import pytest"}, "step grade", errkind.Environment, true},
		{Row{FieldError: "weird"}, "other", errkind.Environment, true},
		// A recorded class of a kind this version knows is read by today's rules...
		{Row{FieldError: "x", FieldErrorKind: "bad_request", FieldErrorClass: "model"}, "bad_request", errkind.Configuration, true},
		// ...and one of a kind it does not know is taken as recorded.
		{Row{FieldError: "x", FieldErrorKind: "gpu_melted", FieldErrorClass: "endpoint"}, "gpu_melted", errkind.Endpoint, true},
	} {
		if k := ErrorKind(c.row); k != c.kind {
			t.Errorf("%v: kind %q, want %q", c.row, k, c.kind)
		}
		if cl := ErrorClass(c.row); cl != c.class {
			t.Errorf("%v: class %q, want %q", c.row, cl, c.class)
		}
		r := WithErrorClass(maps.Clone(c.row))
		if _, has := r[FieldErrorClass]; has != c.withFields || (has && (r[FieldErrorKind] != c.kind ||
			r[FieldErrorClass] != string(c.class))) {
			t.Errorf("%v: WithErrorClass gave %v", c.row, r)
		}
	}
}
