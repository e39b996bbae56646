package tokens

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tiktoken-go/tokenizer"
)

// freshLen encodes text with a codec built just for the test, bypassing this package entirely.
func freshLen(t testing.TB, name, text string) int {
	t.Helper()
	c, err := tokenizer.Get(tokenizer.Encoding(name))
	if err != nil {
		t.Fatal(err)
	}
	ids, _, err := c.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	return len(ids)
}

func sampleSource(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "func handler%d(w http.ResponseWriter, r *http.Request) {\n\tif err := check(r, %d); err != nil {\n\t\thttp.Error(w, err.Error(), 400) // ünïcode\n\t}\n}\n\n", i, i*7)
	}
	return b.String()
}

func TestCountKnownValues(t *testing.T) {
	// Counts published by OpenAI's tiktoken for these strings.
	known := []struct {
		name, text string
		want       int
	}{
		{O200kBase, "hello world", 2},
		{Cl100kBase, "hello world", 2},
		{O200kBase, "We know what we are, but know not what we may be.", 14},
		{Cl100kBase, "We know what we are, but know not what we may be.", 14},
		{Cl100kBase, "supercalifragilistic", 7},
		{O200kBase, "supercalifragilistic", 6},
		{O200kBase, "", 0},
	}
	for _, k := range known {
		got, err := Count(k.name, k.text)
		if err != nil {
			t.Fatal(err)
		}
		if got != k.want {
			t.Errorf("Count(%s, %q) = %d, want %d", k.name, k.text, got, k.want)
		}
	}
	src := sampleSource(50)
	for _, name := range Known() {
		got, err := Count(name, src)
		if err != nil {
			t.Fatal(err)
		}
		if want := freshLen(t, name, src); got != want || got < 500 {
			t.Errorf("%s: Count = %d, encoding length %d", name, got, want)
		}
	}
}

func TestUnknownEncoding(t *testing.T) {
	_, err := Count("p99k_fake", "x")
	if err == nil || !strings.Contains(err.Error(), "o200k_base") || !strings.Contains(err.Error(), "cl100k_base") ||
		!strings.Contains(err.Error(), "p99k_fake") {
		t.Fatalf("error should name the bad encoding and list the known ones: %v", err)
	}
	if _, _, err := Truncate("nope", "x", 3); err == nil {
		t.Fatal("Truncate accepted an unknown encoding")
	}
}

func TestCacheHitsAndBound(t *testing.T) {
	text := "cache me " + t.Name() + "\n" + sampleSource(3)
	before := CacheStats()
	n1, err := Count(O200kBase, text)
	if err != nil {
		t.Fatal(err)
	}
	mid := CacheStats()
	n2, _ := Count(O200kBase, text)
	after := CacheStats()
	if n1 != n2 {
		t.Fatalf("cached count %d != first count %d", n2, n1)
	}
	if mid.Tokenized != before.Tokenized+1 || mid.Hits != before.Hits {
		t.Fatalf("first count: %+v -> %+v, want one tokenization and no hit", before, mid)
	}
	if after.Hits != mid.Hits+1 || after.Tokenized != mid.Tokenized {
		t.Fatalf("second count: %+v -> %+v, want one hit and no tokenization", mid, after)
	}
	// Same text, other encoding: a separate entry.
	if _, err := Count(Cl100kBase, text); err != nil {
		t.Fatal(err)
	}
	if s := CacheStats(); s.Tokenized != after.Tokenized+1 {
		t.Fatalf("cl100k count of the same text was served from the o200k entry: %+v", s)
	}

	SetCacheSize(3)
	defer SetCacheSize(DefaultCacheEntries)
	for i := range 10 {
		if _, err := Count(O200kBase, fmt.Sprintf("text number %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if s := CacheStats(); s.Entries != 3 {
		t.Fatalf("cache holds %d entries, bound is 3", s.Entries)
	}
	// The most recent entries survive, the oldest were evicted.
	s0 := CacheStats()
	_, _ = Count(O200kBase, "text number 9")
	_, _ = Count(O200kBase, "text number 0")
	s1 := CacheStats()
	if s1.Hits != s0.Hits+1 || s1.Tokenized != s0.Tokenized+1 {
		t.Fatalf("LRU order wrong: %+v -> %+v", s0, s1)
	}
}

func TestConcurrentCount(t *testing.T) {
	texts := make([]string, 32)
	want := make([]int, len(texts))
	for i := range texts {
		texts[i] = sampleSource(i + 1)
		want[i] = freshLen(t, O200kBase, texts[i])
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(texts))
	for g := range 8 {
		wg.Go(func() {
			for i := range texts {
				j := (i + g) % len(texts)
				n, err := Count(O200kBase, texts[j])
				if err != nil || n != want[j] {
					errs <- fmt.Errorf("text %d: %d, %v; want %d", j, n, err, want[j])
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestTruncate(t *testing.T) {
	text := sampleSource(40)
	total, _ := Count(O200kBase, text)

	got, n, err := Truncate(O200kBase, text, total)
	if err != nil || got != text || n != total {
		t.Fatalf("text that fits: %d tokens, %v; want it whole (%d)", n, err, total)
	}
	lines := strings.SplitAfter(text, "\n")
	for _, limit := range []int{1, 7, 25, 100, total / 3, total - 1} {
		got, n, err := Truncate(O200kBase, text, limit)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(text, got) || (got != "" && !strings.HasSuffix(got, "\n")) {
			t.Fatalf("limit %d: result is not a prefix of whole lines: %q", limit, got)
		}
		if exact := freshLen(t, O200kBase, got); exact != n || n > limit {
			t.Fatalf("limit %d: reported %d tokens, really %d", limit, n, exact)
		}
		k := strings.Count(got, "\n")
		if next := got + lines[k]; freshLen(t, O200kBase, next) <= limit {
			t.Fatalf("limit %d: one more line (%q) would still fit; prefix not the longest", limit, lines[k])
		}
	}
	// A first line that is already too long gives nothing.
	if got, n, _ := Truncate(O200kBase, "a b c d e f g h\nx\n", 3); got != "" || n != 0 {
		t.Fatalf("too-long first line: %q %d", got, n)
	}
	// A last line without newline counts as a line.
	if got, _, _ := Truncate(Cl100kBase, "one\ntwo\nthree", 100); got != "one\ntwo\nthree" {
		t.Fatalf("unterminated last line dropped: %q", got)
	}
	if got, n, _ := Truncate(Cl100kBase, "one\ntwo\nthree four five six", 4); got != "one\ntwo\n" || n != 4 {
		t.Fatalf("cut before unterminated line: %q %d", got, n)
	}
}

var benchText = sampleSource(400) // about 60 KB of code

// BenchmarkCount is the cost of counting text whose count is cached: one sha256 plus a map lookup. Compare with
// BenchmarkHashBaseline (the hash alone) and BenchmarkCountUncached (tokenizing every time).
func BenchmarkCount(b *testing.B) {
	if _, err := Count(O200kBase, benchText); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		if _, err := Count(O200kBase, benchText); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHashBaseline(b *testing.B) {
	data := []byte(benchText)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		_ = sha256.Sum256(data)
	}
}

func BenchmarkCountUncached(b *testing.B) {
	c, err := codec(O200kBase)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		if _, err := c.Count(benchText); err != nil {
			b.Fatal(err)
		}
	}
}
