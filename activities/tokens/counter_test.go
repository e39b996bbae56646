package tokens

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// wordCounter counts words, a stand-in for a server's tokenizer.
func wordCounter(calls *atomic.Int64) RemoteFunc {
	return func(text string) (int, error) {
		calls.Add(1)
		return len(strings.Fields(text)), nil
	}
}

func TestRemoteCountsCachedByDigest(t *testing.T) {
	var calls atomic.Int64
	c := Remote("words", "test-words-1", wordCounter(&calls))
	for range 3 {
		n, err := c.Count("a b c\nd e\n")
		if err != nil || n != 5 {
			t.Fatalf("Count = %d, %v; want 5", n, err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("the remote tokenizer was asked %d times for one text, want once", calls.Load())
	}
	// Another tokenizer's cache id does not answer from the first one's entries.
	other := Remote("words", "test-words-2", func(string) (int, error) { return 99, nil })
	if n, _ := other.Count("a b c\nd e\n"); n != 99 {
		t.Errorf("a second remote tokenizer answered %d from the first one's cache", n)
	}
	if n, err := c.Count(""); n != 0 || err != nil || calls.Load() != 1 {
		t.Errorf("empty text: %d, %v after %d calls", n, err, calls.Load())
	}
	failing := Remote("down", "test-down", func(string) (int, error) { return 0, errors.New("connection refused") })
	if _, err := failing.Count("x"); err == nil || !strings.Contains(err.Error(), "down: connection refused") {
		t.Errorf("a failing remote: %v", err)
	}
}

func TestTruncateWithRemote(t *testing.T) {
	var calls atomic.Int64
	c := Remote("words", "test-words-trunc", wordCounter(&calls))
	text := "one two\nthree four five\nsix\nseven eight nine ten\nlast"
	for _, tc := range []struct {
		max  int
		want string
		n    int
	}{
		{100, text, 11},
		{0, "", 0},
		{1, "", 0},
		{2, "one two\n", 2},
		{5, "one two\nthree four five\n", 5},
		{6, "one two\nthree four five\nsix\n", 6},
		{9, "one two\nthree four five\nsix\n", 6},
		{10, "one two\nthree four five\nsix\nseven eight nine ten\n", 10},
	} {
		got, n, err := TruncateWith(c, text, tc.max)
		if err != nil || got != tc.want || n != tc.n {
			t.Errorf("TruncateWith(%d) = %q, %d, %v; want %q, %d", tc.max, got, n, err, tc.want, tc.n)
		}
	}
	// An encoding's counter takes Truncate's path and gives its answer.
	e, err := Encoding(O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	a, an, _ := TruncateWith(e, text, 5)
	b, bn, _ := Truncate(O200kBase, text, 5)
	if a != b || an != bn {
		t.Errorf("TruncateWith(o200k_base) = %q, %d; Truncate %q, %d", a, an, b, bn)
	}
}

func TestRegisteredScheme(t *testing.T) {
	Register("testwords", func(arg string) (Counter, error) {
		if arg == "bad" {
			return nil, errors.New("no such model")
		}
		return Remote("testwords:"+arg, "testwords\x00"+arg, func(s string) (int, error) {
			return 10 * len(strings.Fields(s)), nil
		}), nil
	})
	if n, err := Count("testwords:m", "a b"); n != 20 || err != nil {
		t.Errorf("Count(testwords:m) = %d, %v; want 20", n, err)
	}
	if got, n, err := Truncate("testwords:m", "a b\nc\n", 25); got != "a b\n" || n != 20 || err != nil {
		t.Errorf("Truncate(testwords:m) = %q, %d, %v", got, n, err)
	}
	if c, err := For("testwords:m"); err != nil || c.Name() != "testwords:m" {
		t.Errorf("For = %v, %v", c, err)
	}
	if _, err := Count("testwords:bad", "a"); err == nil || !strings.Contains(err.Error(), "no such model") {
		t.Errorf("a resolver's failure: %v", err)
	}
	if _, err := Count("testwords:", "a"); err == nil || !strings.Contains(err.Error(), "names no model") {
		t.Errorf("a scheme without a model: %v", err)
	}
	if _, err := Count("nosuch:x", "a"); err == nil || !strings.Contains(err.Error(), "unknown tokenizer") {
		t.Errorf("an unregistered scheme: %v", err)
	}
}
