package exitcode

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestSayingPrintsAnExitsLinesAndReturnsItsCode(t *testing.T) {
	var stderr bytes.Buffer
	err := fmt.Errorf("round: %w", Failed(Usage, errors.New("bad spec")))
	if code := Saying(OK, err, &stderr); code != Usage || stderr.String() != "starter: bad spec\n" {
		t.Errorf("a wrapped Exit: code %d, stderr %q; want %d and its line", code, stderr.String(), Usage)
	}
	stderr.Reset()
	if code := Saying(Paused, errors.New("not an Exit"), &stderr); code != Paused || stderr.Len() != 0 {
		t.Errorf("another error: code %d, stderr %q; want %d and nothing printed", code, stderr.String(), Paused)
	}
}
