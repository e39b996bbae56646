package activities

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/activities/steps"
)

// A permanent error says its cause once: in the activity (starter grade writes err.Error() to the row) and in the
// workflow, after Temporal's failure converter has carried it across (the Issue workflow writes the
// ApplicationError's text to the row). It carried the cause as both message and wrapped error, so rows said it twice.
func TestPermanentErrorSaysItsCauseOnce(t *testing.T) {
	cause := fmt.Errorf("repo: cloning %s: %w", "/data/repos/acme/gone", os.ErrNotExist)
	err := activityError(steps.Permanent(api.ErrRepo,
		fmt.Sprintf("instance acme__gone-1: repository %s: %v", "/data/repos/acme/gone", cause)))
	conv := temporal.GetDefaultFailureConverter()
	received := conv.FailureToError(conv.ErrorToFailure(err))
	var app *temporal.ApplicationError
	if !errors.As(received, &app) || app.Type() != api.ErrRepo || !app.NonRetryable() {
		t.Fatalf("not a non-retryable %s after the converter: %#v", api.ErrRepo, received)
	}
	for where, text := range map[string]string{"activity": err.Error(), "workflow": app.Error()} {
		if n := strings.Count(text, "file does not exist"); n != 1 {
			t.Errorf("%s: the cause appears %d times: %s", where, n, text)
		}
		if n := strings.Count(text, "instance acme__gone-1"); n != 1 {
			t.Errorf("%s: the message appears %d times: %s", where, n, text)
		}
	}
}
