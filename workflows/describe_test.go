package workflows

import (
	"fmt"
	"os"
	"testing"

	"go.temporal.io/sdk/temporal"
)

// A failure's text reaches the row once. An activity's error wraps its causes with %w, so its text already holds
// theirs; the failure converter carries each cause too, and an ApplicationError's Error appends them again (with
// Temporal's "(type: ..., retryable: ...)"), so rows said a cause once per level of wrapping.
func TestDescribeSaysTheCauseOnce(t *testing.T) {
	conv := temporal.GetDefaultFailureConverter()
	permanentText := "instance acme__gone-1: repository gone: " + os.ErrNotExist.Error()
	for name, c := range map[string]struct {
		err  error
		want string
	}{
		"wrapped": {fmt.Errorf("grade.grade: %w", fmt.Errorf("instance acme__gone-1: %w", os.ErrNotExist)),
			"grade.grade: instance acme__gone-1: " + os.ErrNotExist.Error()},
		"permanent": {temporal.NewNonRetryableApplicationError(permanentText, "RepoError", nil), permanentText},
	} {
		if got := describe(conv.FailureToError(conv.ErrorToFailure(c.err))); got != c.want {
			t.Errorf("%s: row error %q, want %q", name, got, c.want)
		}
	}
}
