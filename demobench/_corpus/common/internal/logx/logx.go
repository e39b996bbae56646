// Package logx is a tiny leveled logger for the command-line tools. Libraries in this module never log.
package logx

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Logger writes one line per event: time, level, message and sorted key=value fields.
type Logger struct {
	mu     sync.Mutex
	out    io.Writer
	min    Level
	now    func() time.Time
	fields map[string]any
}

// New returns a logger writing events at or above min to out.
func New(out io.Writer, min Level) *Logger {
	return &Logger{out: out, min: min, now: time.Now}
}

// Default logs warnings and errors to standard error.
var Default = New(os.Stderr, LevelWarn)

// With returns a logger that adds the given fields to every event.
func (l *Logger) With(kv ...any) *Logger {
	n := &Logger{out: l.out, min: l.min, now: l.now, fields: map[string]any{}}
	for k, v := range l.fields {
		n.fields[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		n.fields[fmt.Sprint(kv[i])] = kv[i+1]
	}
	return n
}

func (l *Logger) log(lv Level, msg string, kv []any) {
	if lv < l.min {
		return
	}
	fields := map[string]any{}
	for k, v := range l.fields {
		fields[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		fields[fmt.Sprint(kv[i])] = kv[i+1]
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-5s %s", l.now().UTC().Format(time.RFC3339), lv, msg)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%v", k, fields[k])
	}
	b.WriteByte('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.out, b.String())
}

// Debug logs at LevelDebug.
func (l *Logger) Debug(msg string, kv ...any) { l.log(LevelDebug, msg, kv) }

// Info logs at LevelInfo.
func (l *Logger) Info(msg string, kv ...any) { l.log(LevelInfo, msg, kv) }

// Warn logs at LevelWarn.
func (l *Logger) Warn(msg string, kv ...any) { l.log(LevelWarn, msg, kv) }

// Error logs at LevelError.
func (l *Logger) Error(msg string, kv ...any) { l.log(LevelError, msg, kv) }
