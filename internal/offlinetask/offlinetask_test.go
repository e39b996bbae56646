package offlinetask

import (
	"slices"
	"testing"
)

// TestRegisterMergesAndUnregisters: a task's input and prompt answers may come from two calls, Guess tries tasks in
// registration order, setting an answer twice panics, and each unregister removes only what its call added.
func TestRegisterMergesAndUnregisters(t *testing.T) {
	dropInput := Register("t_first", Answerer{FromInput: func(c Call) (string, error) { return "in:" + c.Task, nil },
		Markers: []string{"Shared Word"}})
	dropPrompt := Register("t_first", Answerer{FromPrompt: func(p string) string { return "prompt:" + p }})
	dropSecond := Register("t_second", Answerer{FromPrompt: func(string) string { return "second" },
		Markers: []string{"shared word", "only second"}})
	defer dropSecond()

	a, ok := Lookup("t_first")
	if !ok || a.FromInput == nil || a.FromPrompt == nil {
		t.Fatalf("t_first after two registrations: %+v, %v", a, ok)
	}
	if got, _ := a.FromInput(Call{Task: "t_first"}); got != "in:t_first" {
		t.Errorf("input answer %q", got)
	}
	if got := Guess("a SHARED WORD here"); got != "t_first" {
		t.Errorf("Guess = %q, want the first registered task t_first", got)
	}
	if got := Guess("only second"); got != "t_second" {
		t.Errorf("Guess = %q, want t_second", got)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a second prompt answer for t_first was accepted")
			}
		}()
		Register("t_first", Answerer{FromPrompt: func(string) string { return "" }})
	}()

	dropInput()
	if a, ok := Lookup("t_first"); !ok || a.FromInput != nil || a.FromPrompt == nil {
		t.Errorf("after removing the input answer: %+v, %v", a, ok)
	}
	if got := Guess("shared word"); got != "t_second" {
		t.Errorf("Guess = %q after t_first's marker went, want t_second", got)
	}
	dropPrompt()
	if _, ok := Lookup("t_first"); ok || slices.Contains(Tasks(), "t_first") {
		t.Errorf("t_first still registered: %v", Tasks())
	}
}

// TestGuessTriesMarkersInTheirOrder: markers are tried in the order they were registered, also when a task's other
// answers were registered before another task's markers (the offline provider's input answers are registered by
// a package that may be initialized before the fake endpoint registers the markers).
func TestGuessTriesMarkersInTheirOrder(t *testing.T) {
	defer Register("t_late", Answerer{FromInput: func(Call) (string, error) { return "", nil }})()
	defer Register("t_early", Answerer{Markers: []string{"write a diff"}})()
	defer Register("t_late", Answerer{Markers: []string{"diff"}})()
	if got := Guess("please write a diff"); got != "t_early" {
		t.Errorf("Guess = %q, want t_early, whose marker was registered first", got)
	}
	if got := Guess("a diff"); got != "t_late" {
		t.Errorf("Guess = %q, want t_late", got)
	}
}
