// Package offlinetask is the one extension point through which ctxlab's two model stand-ins answer a model task:
// the offline provider (activities/llm/offline), which reads the structured input an activity attaches to its
// request, and the fake OpenAI endpoint (testkit/fakeopenai), which sees only the prompt over HTTP. A task is keyed
// by the name an activity puts in llm.Request.Task (sent to endpoints in TaskHeader). Registering a
// task here is all either stand-in needs to answer it.
//
// The package sits in the bottom layer (it imports nothing of ctxlab) because the fake endpoint may import nothing
// above it; the built-in tasks register their input answers from package offline and their prompt answers from
// package fakeopenai.
package offlinetask

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// TaskHeader is the HTTP header in which the openai and anthropic providers send every call's task
// (llm.Request.Task). Endpoints ignore it; the test servers (testkit/fakeopenai, testkit/fakeanthropic) answer and
// count calls by it.
const TaskHeader = "X-Ctxlab-Task"

// Call is one request as an input answerer sees it.
type Call struct {
	Task string
	// Input is what the activity attached for the stand-in (llm.Request.Offline): a type of the task's own choosing.
	Input any
	// Sample numbers independent samples of one prompt (0, 1, ...); an answerer may use it as a seed.
	Sample int
}

// Answerer answers one task. Either function may be nil; a task is answered by a stand-in only when the function
// that stand-in calls is set.
type Answerer struct {
	// FromInput answers from the activity's structured input; the offline provider calls it. An error is a bad
	// request (the input is missing or of another type).
	FromInput func(Call) (string, error)
	// FromPrompt answers from the prompt text alone; the fake endpoint calls it.
	FromPrompt func(prompt string) string
	// Markers are lower-case phrases whose presence in a prompt names this task when a call comes without a task
	// header (see Guess).
	Markers []string
}

type entry struct {
	task string
	Answerer
}

// guess is one marker naming its task (Answerer.Markers).
type guess struct{ task, marker string }

var (
	mu      sync.RWMutex
	entries []*entry // in registration order (Tasks)
	// guesses are every registered marker in the order registered: Guess tries them in this order, whichever
	// package registered a task's other answers first.
	guesses []guess
)

// Register adds answers for task. A task's answers may come from several calls (the built-ins register FromInput
// from one package and FromPrompt from another); setting a function a task already has panics, as two packages
// answering one task is a programming error. Markers add to the task's markers. The returned function removes
// exactly what this call added, for tests that register a throwaway task (t.Cleanup(Register(...))).
func Register(task string, a Answerer) (unregister func()) {
	if task == "" {
		panic("offlinetask: Register needs a task name")
	}
	mu.Lock()
	defer mu.Unlock()
	e := find(task)
	if e == nil {
		e = &entry{task: task}
		entries = append(entries, e)
	}
	if a.FromInput != nil && e.FromInput != nil {
		panic(fmt.Sprintf("offlinetask: task %q already has an input answer", task))
	}
	if a.FromPrompt != nil && e.FromPrompt != nil {
		panic(fmt.Sprintf("offlinetask: task %q already has a prompt answer", task))
	}
	if a.FromInput != nil {
		e.FromInput = a.FromInput
	}
	if a.FromPrompt != nil {
		e.FromPrompt = a.FromPrompt
	}
	markers := make([]string, len(a.Markers))
	for i, m := range a.Markers {
		markers[i] = strings.ToLower(m)
	}
	e.Markers = append(e.Markers, markers...)
	for _, m := range markers {
		guesses = append(guesses, guess{task, m})
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if a.FromInput != nil {
			e.FromInput = nil
		}
		if a.FromPrompt != nil {
			e.FromPrompt = nil
		}
		e.Markers = removeAll(e.Markers, markers)
		for _, m := range markers {
			if i := slices.Index(guesses, guess{task, m}); i >= 0 {
				guesses = slices.Delete(guesses, i, i+1)
			}
		}
		if e.FromInput == nil && e.FromPrompt == nil && len(e.Markers) == 0 {
			for i, x := range entries {
				if x == e {
					entries = append(entries[:i:i], entries[i+1:]...)
					break
				}
			}
		}
	}
}

// Lookup returns the answers registered for task.
func Lookup(task string) (Answerer, bool) {
	mu.RLock()
	defer mu.RUnlock()
	e := find(task)
	if e == nil {
		return Answerer{}, false
	}
	a := e.Answerer
	a.Markers = append([]string(nil), e.Markers...)
	return a, true
}

// Guess names the task a prompt is for by its wording: the task of the first marker, in the order markers were
// registered, that the prompt contains (case-insensitively), or "" when none does. Activities send their task by
// name; Guess serves callers that do not.
func Guess(prompt string) string {
	low := strings.ToLower(prompt)
	mu.RLock()
	defer mu.RUnlock()
	for _, g := range guesses {
		if strings.Contains(low, g.marker) {
			return g.task
		}
	}
	return ""
}

// Tasks lists the registered tasks in registration order.
func Tasks() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.task
	}
	return out
}

func find(task string) *entry {
	for _, e := range entries {
		if e.task == task {
			return e
		}
	}
	return nil
}

// removeAll removes one occurrence of each of drop from from.
func removeAll(from, drop []string) []string {
	out := append([]string(nil), from...)
	for _, d := range drop {
		for i, x := range out {
			if x == d {
				out = append(out[:i], out[i+1:]...)
				break
			}
		}
	}
	return out
}
