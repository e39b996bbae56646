package listwise

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestParsePermutation holds the parser against hostile answers: every result is a permutation of the window, the
// ids the answer names first (once each, in its order), the rest after them in retrieval order.
func TestParsePermutation(t *testing.T) {
	for _, c := range []struct {
		name, answer string
		n            int
		want         []int
		ok           bool
	}{
		{"canonical", "[3] > [1] > [2]", 3, []int{2, 0, 1}, true},
		{"prose around", "Sure! Ranking:\n[2] > [3] > [1]\nI hope this helps, [sic].", 3, []int{1, 2, 0}, true},
		{"spaces inside brackets", "[ 2 ]>[1]", 2, []int{1, 0}, true},
		{"repeated ids kept once, first place wins", "[2] > [2] > [1] > [2]", 3, []int{1, 0, 2}, true},
		{"missing ids appended in retrieval order", "[4]", 5, []int{3, 0, 1, 2, 4}, true},
		{"out of range ignored", "[9] > [0] > [2] > [6]", 3, []int{1, 0, 2}, true},
		{"negative ignored", "[-1] > [2]", 2, []int{1, 0}, true},
		{"huge id ignored", "[99999999999999999999999999] > [2] > [18446744073709551617]", 2, []int{1, 0}, true},
		{"leading zeros", "[02] > [001]", 2, []int{1, 0}, true},
		{"empty", "", 3, []int{0, 1, 2}, false},
		{"only prose", "Once upon a time, Lily saw 3 big dogs > 2 cats.", 3, []int{0, 1, 2}, false},
		{"bare numbers are not ids", "3 > 1 > 2", 3, []int{0, 1, 2}, false},
		{"only out-of-range ids", "[7] > [8]", 3, []int{0, 1, 2}, false},
		{"unclosed bracket", "[2 > [1", 2, []int{0, 1}, false},
		{"digits then junk", "[2x] > [1]", 2, []int{0, 1}, true},
		{"empty window", "[1]", 0, []int{}, false},
	} {
		got, ok := ParsePermutation(c.answer, c.n)
		if !slices.Equal(got, c.want) || ok != c.ok {
			t.Errorf("%s: ParsePermutation(%q, %d) = %v, %v; want %v, %v", c.name, c.answer, c.n, got, ok, c.want, c.ok)
		}
	}
}

// TestParsePermutationIsAlwaysAPermutation: whatever the answer, the result holds each index of the window once.
func TestParsePermutationIsAlwaysAPermutation(t *testing.T) {
	answers := []string{"[1]" + strings.Repeat(" > [1]", 10000), strings.Repeat("[", 5000) + "3]",
		"[3][2][1][0][-5][4]", "\x00[2]\xff[1]", "[" + strings.Repeat("9", 400) + "]"}
	for _, a := range answers {
		for n := range 6 {
			got, _ := ParsePermutation(a, n)
			sorted := slices.Sorted(slices.Values(got))
			for i, v := range sorted {
				if v != i {
					t.Fatalf("ParsePermutation(%.40q, %d) = %v: not a permutation of 0..%d", a, n, got, n-1)
				}
			}
			if len(got) != n {
				t.Fatalf("ParsePermutation(%.40q, %d) = %v: %d indices", a, n, got, len(got))
			}
		}
	}
}

// TestWindows is docs/methods.md's worked example (12 candidates, windows of 5 moved up by 3), and the edges.
func TestWindows(t *testing.T) {
	for _, c := range []struct {
		n, size, step int
		want          []Window
	}{
		{12, 5, 3, []Window{{7, 12}, {4, 9}, {1, 6}, {0, 3}}},
		{100, 10, 5, nil}, // checked by count below
		{10, 10, 5, []Window{{0, 10}}},
		{4, 10, 5, []Window{{0, 4}}},
		{11, 10, 5, []Window{{1, 11}, {0, 6}}},
		{1, 10, 5, nil},
		{0, 10, 5, nil},
		{6, 2, 2, []Window{{4, 6}, {2, 4}, {0, 2}}},
	} {
		got := Windows(c.n, c.size, c.step)
		if c.n == 100 {
			// SweRank's setting: 19 windows, (90,100) to (0,10), each 5 above the last.
			if len(got) != 19 || got[0] != (Window{90, 100}) || got[18] != (Window{0, 10}) {
				t.Errorf("Windows(100, 10, 5) = %v", got)
			}
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Windows(%d, %d, %d) = %v, want %v", c.n, c.size, c.step, got, c.want)
		}
	}
}

// TestRerankWorkedExample is docs/methods.md's worked example: 12 candidates c1..c12 in retrieval order, windows of
// 5 moved up by 3, and a model that always puts the candidates it likes (c12, c9, c5) first in a window and keeps
// the rest in order. The example's third window gets an answer that does not parse, which keeps that window's order.
func TestRerankWorkedExample(t *testing.T) {
	liked := map[int]int{12: 1, 9: 2, 5: 3} // candidate -> preference (lower is better)
	var asked [][]int
	ask := func(_ context.Context, window []int) (string, error) {
		asked = append(asked, slices.Clone(window))
		if len(asked) == 3 {
			return "I cannot rank these.", nil
		}
		ids := make([]int, len(window))
		for i := range ids {
			ids[i] = i
		}
		slices.SortStableFunc(ids, func(a, b int) int {
			pa, pb := liked[window[a]], liked[window[b]]
			switch {
			case pa != 0 && pb != 0:
				return pa - pb
			case pa != 0:
				return -1
			case pb != 0:
				return 1
			}
			return 0
		})
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = fmt.Sprintf("[%d]", id+1)
		}
		return strings.Join(parts, " > "), nil
	}
	order := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	got, st, err := Rerank(context.Background(), order, 5, 3, ask)
	if err != nil {
		t.Fatal(err)
	}
	wantAsked := [][]int{
		{8, 9, 10, 11, 12}, // window 8-12 (positions 8..12): c12 then c9 go up
		{5, 6, 7, 12, 9},   // positions 5..9: c12, c9, c5 first
		{2, 3, 4, 12, 9},   // positions 2..6: unparseable, kept
		{1, 2, 3},          // positions 1..3
	}
	if !slices.EqualFunc(asked, wantAsked, slices.Equal) {
		t.Errorf("windows asked %v, want %v", asked, wantAsked)
	}
	want := []int{1, 2, 3, 4, 12, 9, 5, 6, 7, 8, 10, 11}
	if !slices.Equal(got, want) {
		t.Errorf("reranked %v, want %v", got, want)
	}
	if st.Windows != 4 || st.Unparsed != 1 {
		t.Errorf("stats %+v, want 4 windows, 1 unparsed", st)
	}
	if !slices.Equal(order, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) {
		t.Errorf("Rerank changed its input: %v", order)
	}
}

// TestRerankStopsOnError: a failed call fails the rerank (the step is retried; the answers so far are cached).
func TestRerankStopsOnError(t *testing.T) {
	boom := errors.New("endpoint down")
	calls := 0
	_, _, err := Rerank(context.Background(), []int{1, 2, 3, 4, 5, 6}, 3, 2, func(context.Context, []int) (string, error) {
		calls++
		if calls == 2 {
			return "", boom
		}
		return "[1] > [2] > [3]", nil
	})
	if !errors.Is(err, boom) || calls != 2 {
		t.Errorf("err %v after %d calls, want the second call's error", err, calls)
	}
}

// TestRerankIncomplete: an answer naming part of its window moves those up and counts as incomplete.
func TestRerankIncomplete(t *testing.T) {
	got, st, err := Rerank(context.Background(), []int{10, 20, 30}, 3, 1, func(context.Context, []int) (string, error) {
		return "The best is [3].", nil
	})
	if err != nil || !slices.Equal(got, []int{30, 10, 20}) || st != (Stats{Windows: 1, Incomplete: 1}) {
		t.Errorf("Rerank = %v, %+v, %v; want [30 10 20], one incomplete window", got, st, err)
	}
}
