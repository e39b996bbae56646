// Package cliutil has the exit codes and error printing shared by this module's commands.
package cliutil

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Exit codes used by every command.
const (
	ExitOK       = 0
	ExitFailure  = 1 // the operation ran and reported a problem
	ExitUsage    = 2 // bad flags or arguments
	ExitInternal = 3 // a bug or an unexpected I/O error
)

// UsageError marks an error caused by how the command was called.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef builds a UsageError.
func Usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// Code maps an error to an exit code.
func Code(err error) int {
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue):
		return ExitUsage
	default:
		return ExitFailure
	}
}

// Fail prints err prefixed with the program name to w and returns its exit code.
func Fail(w io.Writer, prog string, err error) int {
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(w, "%s: %v\n", prog, err)
	return Code(err)
}

// Exit ends the program with the code for err, printing it first.
func Exit(prog string, err error) {
	os.Exit(Fail(os.Stderr, prog, err))
}
