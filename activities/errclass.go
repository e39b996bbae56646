package activities

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api/errkind"
)

// stepError gives a step's failure its kind, so that the row says whose failure it is: an error that already has a
// type (a model call's kind, ErrBadInput and the other api types, the spend cap, a provider's wait) stays as it is;
// any other becomes an application error typed with its kind: the kind it was marked with where it happened
// (errkind.Mark), else the system error under it (a full disk, a refused permission), else errkind.StepFailed, the
// machine's. Retryable kinds stay retryable, as untyped errors were. Cancellation is left alone.
func stepError(step string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return err
	}
	k := kindOfError(err)
	return temporal.NewApplicationErrorWithOptions(step+": "+err.Error(), string(k),
		temporal.ApplicationErrorOptions{NonRetryable: !k.Retryable()})
}

// kindErrorf is a step's failure of a kind known where it happens, retryable as the kind is.
func kindErrorf(k errkind.Kind, format string, args ...any) error {
	return temporal.NewApplicationErrorWithOptions(fmt.Sprintf(format, args...), string(k),
		temporal.ApplicationErrorOptions{NonRetryable: !k.Retryable()})
}

// kindOfError is the kind an error was marked with, else that of the system error in its chain, else StepFailed.
func kindOfError(err error) errkind.Kind {
	if k, ok := errkind.KindOf(err); ok {
		return k
	}
	if k, ok := errnoKind(err); ok {
		return k
	}
	return errkind.StepFailed
}

// errnoKind is the kind of a system error in err's chain: a full disk or quota, a refused permission.
func errnoKind(err error) (errkind.Kind, bool) {
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
