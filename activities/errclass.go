package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/activities/steps"
)

// stepError gives a step's failure its kind, so that the row says whose failure it is: an error that already has a
// type (a steps.Error: a model call's kind, ErrBadInput and the other api types, the spend cap, a provider's wait)
// stays as it is; any other becomes a steps.Error typed with its kind: the kind it was marked with where it
// happened (errkind.Mark), else the system error under it (a full disk, a refused permission), else
// errkind.StepFailed, the machine's. Retryable kinds stay retryable, as untyped errors were. Cancellation is left
// alone.
func stepError(step string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var se *steps.Error
	if errors.As(err, &se) {
		return err
	}
	k := kindOfError(err)
	return &steps.Error{Type: string(k), Message: step + ": " + err.Error(), Retryable: k.Retryable()}
}

// kindOfError is the kind an error was marked with, else that of the system error in its chain, else StepFailed.
func kindOfError(err error) errkind.Kind {
	if k, ok := errkind.KindOf(err); ok {
		return k
	}
	if k, ok := steps.ErrnoKind(err); ok {
		return k
	}
	return errkind.StepFailed
}

// activityError is the one place a failure of this package's activities becomes what Temporal records: a
// steps.Error becomes an application error of its type, its text and its retryability, with the endpoint's wait as
// its details when it has one. Its only cause, when its model calls used anything, is an ErrCallUsage error whose
// detail is that usage (the Issue workflow adds it to the failed step's rows); no other cause is attached: an
// ApplicationError's text is its message followed by its cause's, so a cause would say the same text twice in every
// row and log that shows the error. Any other error is returned as it is.
func activityError(err error) error {
	var se *steps.Error
	if !errors.As(err, &se) {
		return err
	}
	var details []any
	if se.Wait != nil {
		details = []any{*se.Wait}
	}
	var cause error
	if se.Usage != nil {
		cause = temporal.NewApplicationErrorWithOptions("the step's model calls' usage", api.ErrCallUsage,
			temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{*se.Usage}})
	}
	return temporal.NewApplicationErrorWithOptions(err.Error(), se.Type,
		temporal.ApplicationErrorOptions{NonRetryable: !se.Retryable, Details: details, Cause: cause})
}

// permanentError is a failure of an activity of this package's own that retrying cannot fix, as Temporal records it.
func permanentError(kind string, err error) error {
	return activityError(steps.Permanent(kind, err.Error()))
}
