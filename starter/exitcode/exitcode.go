// Package exitcode holds the starter's exit codes and the error a command returns to stop before its work is done
// with one of them, which the commands of starter/cli and the sweep client share.
package exitcode

import (
	"errors"
	"fmt"
	"io"
)

// The starter's exit codes.
const (
	OK   = 0
	Fail = 1 // the work ran and failed
	// Usage: bad flags, a bad spec or dataset: nothing ran.
	Usage = 2
	// Paused: the sweep stopped at its spend cap (limits.spend_usd); raising it and running again continues.
	Paused = 3
	// RowErrors: the sweep finished, but some rows have an error (starter run --allow-errors exits 0 instead).
	RowErrors = 4
)

// Exit ends a command before its work is done: the command prints Lines on stderr and exits with Code.
type Exit struct {
	Code  int
	Lines []string
}

func (x *Exit) Error() string { return fmt.Sprint(x.Lines) }

// With is an Exit of code that prints lines.
func With(code int, lines ...string) *Exit { return &Exit{Code: code, Lines: lines} }

// Failed is an Exit of code that prints err after "starter: ".
func Failed(code int, err error) *Exit { return With(code, "starter: "+err.Error()) }

// Saying is code, or the code of an Exit err after printing its lines on stderr.
func Saying(code int, err error, stderr io.Writer) int {
	var x *Exit
	if !errors.As(err, &x) {
		return code
	}
	for _, line := range x.Lines {
		fmt.Fprintln(stderr, line)
	}
	return x.Code
}
