package kvconf

import (
	"strconv"
	"strings"
	"time"
)

// String returns the value of key, or def when it is not set.
func (s *Section) String(key, def string) string {
	if v, ok := s.Get(key); ok {
		return v
	}
	return def
}

// Int returns the value of key as an integer, or def when it is not set.
func (s *Section) Int(key string, def int) (int, error) {
	v, ok := s.Get(key)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.ReplaceAll(v, "_", ""))
	if err != nil {
		return def, &TypeError{Section: s.Name, Key: key, Value: v, Want: "integer"}
	}
	return n, nil
}

// Bool returns the value of key as a boolean (true/false, yes/no, on/off, 1/0), or def when it is not set.
func (s *Section) Bool(key string, def bool) (bool, error) {
	v, ok := s.Get(key)
	if !ok {
		return def, nil
	}
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0":
		return false, nil
	}
	return def, &TypeError{Section: s.Name, Key: key, Value: v, Want: "boolean"}
}

// Duration returns the value of key as a duration ("1m30s"; a bare number is seconds), or def when it is not set.
func (s *Section) Duration(key string, def time.Duration) (time.Duration, error) {
	v, ok := s.Get(key)
	if !ok {
		return def, nil
	}
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return def, &TypeError{Section: s.Name, Key: key, Value: v, Want: "duration"}
	}
	return d, nil
}

// List returns the value of key split at commas, each item trimmed; empty items are dropped.
func (s *Section) List(key string) []string {
	v, ok := s.Get(key)
	if !ok {
		return nil
	}
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Size returns the value of key as a byte count: a number with an optional unit k, M, G (powers of 1024).
func (s *Section) Size(key string, def int64) (int64, error) {
	v, ok := s.Get(key)
	if !ok {
		return def, nil
	}
	v = strings.TrimSpace(v)
	mult := int64(1)
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'k', 'K':
			mult, v = 1<<10, v[:n-1]
		case 'm', 'M':
			mult, v = 1<<20, v[:n-1]
		case 'g', 'G':
			mult, v = 1<<30, v[:n-1]
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return def, &TypeError{Section: s.Name, Key: key, Value: v, Want: "size"}
	}
	return n * mult, nil
}
