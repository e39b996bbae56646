package kvconf

import (
	"errors"
	"fmt"
)

// Messages of parse errors. They are part of the command's output, so keep them stable.
const (
	msgUnterminatedQuote  = "unterminated quoted value"
	msgTextAfterQuote     = "unexpected text after closing quote"
	msgBadEscape          = "unknown escape sequence \\%c in quoted value"
	msgMissingSeparator   = "expected '=' or ':' after key %q"
	msgEmptyKey           = "empty key name"
	msgBadKey             = "invalid character %q in key name"
	msgBadSection         = "malformed section header"
	msgEmptySection       = "empty section name"
	msgDuplicateKey       = "duplicate key %q in section %q"
	msgDuplicateSection   = "duplicate section %q"
	msgContinuationAtEOF  = "line continuation at end of file"
	msgKeyOutsideSection  = "key %q appears before any section header"
	msgLineTooLong        = "line longer than %d bytes"
	msgInvalidUTF8        = "line is not valid UTF-8"
	msgUnknownValueSuffix = "unknown unit %q in value"
)

// ParseError is returned for input that is not a valid configuration file. Line is one-based.
type ParseError struct {
	File string // name given to the parser, may be empty
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("kvconf: %s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("kvconf: line %d: %s", e.Line, e.Msg)
}

func newParseError(file string, line int, format string, args ...any) *ParseError {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &ParseError{File: file, Line: line, Msg: msg}
}

// ErrNotFound is returned by lookups of a section or key that does not exist.
var ErrNotFound = errors.New("kvconf: not found")

// TypeError is returned by typed getters when a value cannot be converted.
type TypeError struct {
	Section, Key, Value, Want string
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("kvconf: [%s] %s = %q is not a valid %s", e.Section, e.Key, e.Value, e.Want)
}
