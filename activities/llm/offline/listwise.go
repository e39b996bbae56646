package offline

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"ctxlab/activities/inventory"
	"ctxlab/internal/offlinetask"
	"ctxlab/specs"
)

// ListwiseInput is what the offline stand-in reads instead of a listwise_rerank prompt: the issue and the window's
// candidates, in the order the prompt numbers them [1]..[n].
type ListwiseInput struct {
	Issue string
	// Candidates are each candidate's path and text.
	Candidates []string
}

func init() {
	offlinetask.Register(specs.ListwiseRerank.Task, offlinetask.Answerer{
		FromInput: Answer(func(in *ListwiseInput, _ offlinetask.Call) (string, error) { return Listwise(*in), nil }),
		// The fake endpoint sees only the prompt: it keeps the order the prompt numbers.
		FromPrompt: listwiseFromPrompt,
	})
}

// Listwise ranks the window lexically, as a stand-in for a reranking model: a candidate that contains a code
// identifier the issue names (Identifiers) first, then by how many distinct words of the issue it holds, ties in
// the window's order. It answers in SweRank's format, "[2] > [1] > [3]".
func Listwise(in ListwiseInput) string {
	issue := inventory.Set(in.Issue)
	idents := Identifiers(in.Issue)
	score := make([]int, len(in.Candidates))
	for i, c := range in.Candidates {
		for w := range inventory.Set(c) {
			if issue[w] {
				score[i]++
			}
		}
		for _, id := range idents {
			if strings.Contains(c, id) {
				score[i] += 1000
			}
		}
	}
	ids := make([]int, len(in.Candidates))
	for i := range ids {
		ids[i] = i
	}
	slices.SortStableFunc(ids, func(a, b int) int { return score[b] - score[a] })
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("[%d]", id+1)
	}
	return strings.Join(parts, " > ")
}

// numbered is a line of a listwise prompt that opens a candidate: "[N]" at its start.
var numbered = regexp.MustCompile(`(?m)^\[(\d+)\]`)

// listwiseFromPrompt answers the candidates the prompt numbers, in its order.
func listwiseFromPrompt(prompt string) string {
	var parts []string
	for _, m := range numbered.FindAllStringSubmatch(prompt, -1) {
		parts = append(parts, "["+m[1]+"]")
	}
	return strings.Join(parts, " > ")
}
