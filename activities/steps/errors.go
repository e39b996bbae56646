package steps

import (
	"errors"
	"fmt"
	"syscall"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
)

// Error is a step's failure whose type is known where it happens: an errkind.Kind, or one of package api's error
// types (api.ErrBadInput, ...). It is a plain value: the activity that runs the step (package activities) turns it
// into what Temporal records, with the same type, message and retryability. A step's other errors are typed there
// too: by the kind errkind.Mark gave them, the system error under them, or errkind.StepFailed.
type Error struct {
	Type    string
	Message string
	// Retryable says whether another attempt may succeed (Temporal retries it after its backoff).
	Retryable bool
	// Wait, on an api.ErrProviderWait, is how long the endpoint asked to wait: the Issue workflow waits that long on
	// a durable timer and runs the node again.
	Wait *api.ProviderWait
	// Usage is what the attempt's model calls used and bought (CallUsage.Failed): the Issue workflow adds it to the
	// failed step's rows, so they count what it paid.
	Usage *api.CallUsage
}

func (e *Error) Error() string { return e.Message }

// Permanent is a failure of a type that retrying cannot fix, saying msg.
func Permanent(kind, msg string) error { return &Error{Type: kind, Message: msg} }

// permanent makes err a failure of the kind that retrying cannot fix. Its text is the message; no cause is kept,
// so the text is said once in every row and log that shows the error.
func permanent(kind string, err error) error { return Permanent(kind, err.Error()) }

func permanentf(kind, format string, args ...any) error {
	return Permanent(kind, fmt.Sprintf(format, args...))
}

// isPermanent reports whether err is already a failure that retrying cannot fix.
func isPermanent(err error) bool {
	var se *Error
	return errors.As(err, &se) && !se.Retryable
}

// kindErrorf is a step's failure of a kind known where it happens, retryable as the kind is.
func kindErrorf(k errkind.Kind, format string, args ...any) error {
	return &Error{Type: string(k), Message: fmt.Sprintf(format, args...), Retryable: k.Retryable()}
}

// ErrnoKind is the kind of a system error in err's chain: a full disk or quota, a refused permission.
func ErrnoKind(err error) (errkind.Kind, bool) {
	var no syscall.Errno
	if !errors.As(err, &no) {
		return "", false
	}
	switch no {
	case syscall.ENOSPC, syscall.EDQUOT:
		return errkind.DiskFull, true
	case syscall.EACCES, syscall.EPERM, syscall.EROFS:
		return errkind.Permission, true
	}
	return "", false
}
