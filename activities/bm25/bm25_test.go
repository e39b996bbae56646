package bm25

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
)

func TestTokenize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"parseHTTPHeader", []string{"parsehttpheader", "parse", "http", "header"}},
		{"snake_case_name", []string{"snake_case_name", "snake", "case", "name"}},
		{"HTTPServer.ListenAndServe()", []string{"httpserver", "http", "server", "listenandserve", "listen", "and", "serve"}},
		{"utf8Decode v2 x", []string{"utf8decode", "utf", "decode", "v2", "x"}},
		{"__init__ fmt.Sprintf", []string{"init", "fmt", "sprintf"}},
		{"a+b == c_d", []string{"a", "b", "c_d"}},
	} {
		if got := Tokenize(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestScoresByHand checks BM25 against a case computed by hand.
func TestScoresByHand(t *testing.T) {
	ix := New(Params{K1: 1.2, B: 0.75})
	ix.Add("apple apple banana") // 3 terms
	ix.Add("banana cherry")      // 2 terms
	ix.Add("cherry cherry cherry date")
	// N = 3, avgdl = 9/3 = 3.
	// "apple": df 1 -> idf = ln(1 + 2.5/1.5) = ln(8/3).
	//   doc0: tf 2, |d| = 3: 2*2.2 / (2 + 1.2*(0.25 + 0.75*1)) = 4.4/3.2 = 1.375
	// "banana": df 2 -> idf = ln(1 + 1.5/2.5) = ln(1.6).
	//   doc0: tf 1, |d| 3: 2.2/(1+1.2) = 1
	//   doc1: tf 1, |d| 2: 2.2/(1+1.2*(0.25+0.5)) = 2.2/1.9
	got := ix.Scores("apple banana")
	want := []float64{math.Log(8.0/3)*1.375 + math.Log(1.6)*1, math.Log(1.6) * 2.2 / 1.9, 0}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("doc %d: score %v, want %v", i, got[i], want[i])
		}
	}
	if r := ix.Rank("apple banana"); !slices.Equal(r, []int{0, 1, 2}) {
		t.Errorf("rank %v", r)
	}
	// A repeated query term counts twice.
	twice := ix.Scores("cherry cherry")
	once := ix.Scores("cherry")
	if math.Abs(twice[2]-2*once[2]) > 1e-12 || once[2] <= once[1] {
		t.Errorf("cherry: once %v twice %v", once, twice)
	}
	if r := ix.Rank("nothing matches"); !slices.Equal(r, []int{0, 1, 2}) {
		t.Errorf("ties must keep insertion order: %v", r)
	}
}

func TestParamsCheck(t *testing.T) {
	if err := Defaults().Check(); err != nil {
		t.Error(err)
	}
	for _, p := range []Params{{K1: -1, B: 0.4}, {K1: 1, B: 1.5}, {K1: math.NaN(), B: 0}} {
		if p.Check() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

// TestConcurrentQueries: queries share the index's scratch space under a lock, so rankings asked at once equal
// those asked one after the other (go test -race checks the sharing).
func TestConcurrentQueries(t *testing.T) {
	ix := New(Defaults())
	for i := range 500 {
		ix.Add(fmt.Sprintf("func handler%d(req Request) { parseHeader(req, %d); cacheToken_%d() }", i, i%7, i%13))
	}
	queries := []string{"parse header", "cache token 3", "handler42 request", "nothing here", "req req Request"}
	want := make([][]int, len(queries))
	for i, q := range queries {
		want[i] = ix.Rank(q)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(queries))
	for range 8 {
		for i, q := range queries {
			wg.Go(func() {
				if got := ix.Rank(q); !slices.Equal(got, want[i]) {
					errs <- q
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for q := range errs {
		t.Errorf("query %q ranked differently when asked concurrently", q)
	}
}
