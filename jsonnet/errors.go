package jsonnet

import (
	"errors"
	"fmt"
	"strings"

	gojsonnet "github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"
)

// Error is one problem with a spec, with where it is. Line and Col are 1-based; 0 means unknown.
type Error struct {
	File string
	Line int
	Col  int
	Msg  string
}

// Error returns one line: "file:line:col: message", "file:line: message" or "file: message".
func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return e.File + ": " + e.Msg
	}
	return e.Msg
}

// Errors is several problems with a spec, one per line.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the first *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// staticError is the part of go-jsonnet's (internal) StaticError type that ctxlab needs: parse and static analysis
// errors carry one location.
type staticError interface {
	error
	Loc() ast.LocationRange
}

// fromLocation makes an Error at a go-jsonnet location.
func fromLocation(loc ast.LocationRange, msg string) *Error {
	file := loc.FileName
	if file == "" && loc.File != nil {
		file = string(loc.File.DiagnosticFileName) // code that is not a file: "<extvar:name>", "<std>"
	}
	return &Error{File: file, Line: loc.Begin.Line, Col: loc.Begin.Column, Msg: oneLine(msg)}
}

// staticMessage returns a static error's message without the location go-jsonnet puts in front of it.
func staticMessage(err staticError) string {
	msg := err.Error()
	loc := err.Loc()
	if loc.IsSet() {
		msg = strings.TrimPrefix(msg, loc.String()+" ")
	}
	return msg
}

// fromJsonnet turns an error from go-jsonnet's ImportAST or Evaluate into an *Error. A runtime error is placed at
// the innermost frame of the trace that is in a file the researcher wrote (not the embedded library or the standard
// library) when there is one, else at the innermost frame with a location. fallback names the spec file for errors
// without any location.
func fromJsonnet(err error, fallback string) *Error {
	var se staticError
	if errors.As(err, &se) {
		if loc := se.Loc(); loc.IsSet() {
			return fromLocation(loc, staticMessage(se))
		}
	}
	var rt gojsonnet.RuntimeError
	if errors.As(err, &rt) {
		if f, ok := innermostFrame(rt.StackTrace); ok {
			return fromLocation(f.Loc, rt.Msg)
		}
		return &Error{File: fallback, Msg: oneLine(rt.Msg)}
	}
	return &Error{File: fallback, Msg: oneLine(err.Error())}
}

func innermostFrame(frames []gojsonnet.TraceFrame) (gojsonnet.TraceFrame, bool) {
	// go-jsonnet lists frames outermost first.
	for i := len(frames) - 1; i >= 0; i-- {
		if f := frames[i]; f.Loc.IsSet() && !isLibrary(f.Loc.FileName) {
			return f, true
		}
	}
	for i := len(frames) - 1; i >= 0; i-- {
		if f := frames[i]; f.Loc.IsSet() {
			return f, true
		}
	}
	return gojsonnet.TraceFrame{}, false
}

// oneLine keeps a message on one line, so that every error is exactly one line.
func oneLine(msg string) string {
	msg = strings.TrimSpace(msg)
	if !strings.ContainsAny(msg, "\r\n") {
		return msg
	}
	fields := strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	return strings.Join(fields, " ")
}
