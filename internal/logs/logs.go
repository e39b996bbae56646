// Package logs sets up ctxlab's logging: zerolog to the console for people and as JSON lines in the run folder,
// and an adapter that routes the Temporal SDK's own log lines into the same logger.
package logs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/internal/regularfile"
)

// Options configure New.
type Options struct {
	// Console receives human-readable lines (nil: none).
	Console io.Writer
	// ConsoleLevel filters the console (the file gets everything from debug up).
	ConsoleLevel zerolog.Level
	// ConsoleJSON writes JSON lines to the console instead of lines for people (for scripts).
	ConsoleJSON bool
	// File, when set, receives JSON lines.
	File string
}

// New returns a logger and a function that closes its file.
func New(o Options) (zerolog.Logger, func() error, error) {
	var writers []io.Writer
	closeFn := func() error { return nil }
	if o.Console != nil {
		var cw io.Writer = zerolog.ConsoleWriter{Out: o.Console, TimeFormat: time.TimeOnly,
			NoColor: !IsTerminal(o.Console)}
		if o.ConsoleJSON {
			cw = o.Console
		}
		writers = append(writers, &zerolog.FilteredLevelWriter{Writer: zerolog.LevelWriterAdapter{Writer: cw},
			Level: o.ConsoleLevel})
	}
	if o.File != "" {
		if err := os.MkdirAll(filepath.Dir(o.File), 0o755); err != nil {
			return zerolog.Nop(), closeFn, fmt.Errorf("log file: %w", err)
		}
		f, err := regularfile.Open(o.File, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return zerolog.Nop(), closeFn, fmt.Errorf("log file: %w", err)
		}
		writers = append(writers, f)
		closeFn = f.Close
	}
	if len(writers) == 0 {
		return zerolog.Nop(), closeFn, nil
	}
	return zerolog.New(zerolog.MultiLevelWriter(writers...)).With().Timestamp().Logger(), closeFn, nil
}

// Temporal adapts a zerolog logger to the Temporal SDK's log.Logger interface. The SDK is chatty at info level,
// so its info lines become debug lines.
type Temporal struct {
	L zerolog.Logger
}

func (t Temporal) Debug(msg string, kv ...interface{}) { t.L.Debug().Fields(kv).Msg(msg) }
func (t Temporal) Info(msg string, kv ...interface{})  { t.L.Debug().Fields(kv).Msg(msg) }
func (t Temporal) Warn(msg string, kv ...interface{})  { t.L.Warn().Fields(kv).Msg(msg) }
func (t Temporal) Error(msg string, kv ...interface{}) { t.L.Error().Fields(kv).Msg(msg) }

// IsTerminal reports whether w is a terminal, where colors and redrawn lines make sense. A writer that stands in
// front of one (as the starter's switch between the terminal and its progress bars) says so with IsTerminal.
func IsTerminal(w io.Writer) bool {
	if t, ok := w.(interface{ IsTerminal() bool }); ok {
		return t.IsTerminal()
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
