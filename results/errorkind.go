package results

import (
	"fmt"
	"regexp"
	"strings"

	"ctxlab/activities/api/errkind"
)

// Fields of a row with an error that say what went wrong and whose failure it is. The Issue workflow records the
// kind when the failure has one; the record step fills in both for every row with an error (RowErrorKind,
// RowErrorClass), so readers need not derive them.
const (
	FieldErrorKind  = "error_kind"  // an errkind.Kind, or for rows of older versions "step NAME", "timeout", "other"
	FieldErrorClass = "error_class" // an errkind.Class: model, endpoint, configuration or environment
)

var (
	modelCallKind = regexp.MustCompile(`model call failed \(([a-z_]+)`)
	failedStep    = regexp.MustCompile(`^step ([^:\s]+):`)
)

// ErrorKind names what kind of failure a row's error is ("" for a row without one): the row's error_kind when it
// has one, else (rows recorded before error_kind) the model call's failure kind (auth, quota, context_length, ...)
// found in the message, "timeout", or "step NAME" for the failing step.
func ErrorKind(r Row) string {
	if r[FieldError] == nil {
		return ""
	}
	if k := r.String(FieldErrorKind); k != "" {
		return k
	}
	msg := fmt.Sprint(r[FieldError])
	if m := modelCallKind.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	if strings.Contains(msg, "timed out (") {
		return string(errkind.Timeout)
	}
	if m := failedStep.FindStringSubmatch(msg); m != nil {
		return "step " + m[1]
	}
	return "other"
}

// ErrorClass says whose failure a row's error is ("" for a row without one), from its kind: a row's recorded
// error_class counts only when this version does not know the kind (a newer version's), so rows recorded before a
// kind moved class are read by today's rules.
func ErrorClass(r Row) errkind.Class {
	kind := ErrorKind(r)
	if kind == "" {
		return ""
	}
	if _, known := errkind.OfType(kind); !known && kind != string(errkind.LostWorker) {
		if c, ok := errkind.ParseClass(r.String(FieldErrorClass)); ok {
			return c
		}
	}
	return errkind.ClassOf(kind)
}

// WithErrorClass returns the row with error_kind and error_class filled in when it has an error (the row itself,
// changed in place).
func WithErrorClass(r Row) Row {
	if r[FieldError] == nil {
		return r
	}
	r[FieldErrorKind], r[FieldErrorClass] = ErrorKind(r), string(ErrorClass(r))
	return r
}
