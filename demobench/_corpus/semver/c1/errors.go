package semver

import (
	"errors"
	"fmt"
)

var (
	errEmptyNumber = errors.New("empty numeric part")
	errLeadingZero = errors.New("numeric part with a leading zero")
	errNotNumber   = errors.New("numeric part is not a number")
)

// ParseError reports a version or constraint that could not be read.
type ParseError struct {
	Input  string
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("semver: invalid version %q: %s", e.Input, e.Reason)
}
