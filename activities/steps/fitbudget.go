package steps

import (
	"context"
	"strings"

	"ctxlab/activities/api"
	"ctxlab/activities/budget"
	"ctxlab/activities/chunk"
	"ctxlab/activities/contexts"
	"ctxlab/specs"
)

// budgetTarget returns the token target of a fitted step: multiplier x the anchor context's tokens. ok is false
// when the step has no budget input (it then uses its own fixed knob).
func (j *job) budgetTarget(ctx context.Context, tokenizer string, p specs.FitParams) (target, anchor int, ok bool, err error) {
	if _, has := j.in.Inputs["budget"]; !has {
		return 0, 0, false, nil
	}
	if p.Multiplier < 0 {
		return 0, 0, false, permanentf(api.ErrBadInput, "%s: budget multiplier %v is negative", j.in.Step, p.Multiplier)
	}
	c, err := j.loadContext(ctx, "budget")
	if err != nil {
		return 0, 0, false, err
	}
	anchor, err = countTokens(tokenizer, c.Render())
	if err != nil {
		return 0, 0, false, err
	}
	m := p.Multiplier
	if m == 0 {
		m = 1
	}
	return int(float64(anchor)*m + 0.5), anchor, true, nil
}

// fitRow is what a fitted step adds to its rows. An unreachable budget is recorded, never fatal.
func fitRow(p specs.FitParams, target, anchor int, r budget.Result) map[string]any {
	m := p.Multiplier
	if m == 0 {
		m = 1
	}
	row := map[string]any{}
	specs.BudgetTokens.Set(row, target)
	specs.BudgetEvals.Set(row, r.Evals)
	specs.BudgetAnchorTokens.Set(row, anchor)
	specs.BudgetMultiplier.Set(row, m)
	specs.BudgetKnob.Set(row, r.Knob)
	specs.BudgetReached.Set(row, r.Reached)
	if !r.Reached {
		specs.BudgetError.Set(row, r.Why)
	}
	return row
}

// ranked is repository text in rank order, from which a method shows a prefix: the first lines of the ranked
// chunks (partial: the last chunk may be cut at a line) or the first whole chunks.
type ranked struct {
	chunks    []chunk.Chunk
	fileLines map[string]int // lines of each file, to tell a whole file from a snippet
	lines     []int          // lines of each chunk
	total     int
	partial   bool
	issue     string
}

func newRanked(issue string, chunks []chunk.Chunk, fileLines map[string]int, partial bool) *ranked {
	r := &ranked{chunks: chunks, fileLines: fileLines, partial: partial, issue: issue}
	for _, c := range chunks {
		n := c.End - c.Start + 1
		r.lines = append(r.lines, n)
		r.total += n
	}
	return r
}

// max is the largest knob: every line, or every chunk.
func (r *ranked) max() int {
	if r.partial {
		return r.total
	}
	return len(r.chunks)
}

// take shows the first n lines (partial) or the first n chunks.
func (r *ranked) take(n int) (contexts.Context, int) {
	c := contexts.Context{Issue: r.issue}
	shown := 0
	for i, ch := range r.chunks {
		if n <= 0 {
			break
		}
		text, end := ch.Text, ch.End
		if r.partial && r.lines[i] > n {
			text = strings.Join(strings.SplitAfter(ch.Text, "\n")[:n], "")
			end = ch.Start + n - 1
		}
		kind := contexts.KindSnippet
		if ch.Start == 1 && end >= r.fileLines[ch.Path] {
			kind = contexts.KindFile
		}
		c.Blocks = append(c.Blocks, contexts.Block{Path: ch.Path, Kind: kind, Start: ch.Start, Text: text})
		shown++
		if r.partial {
			n -= end - ch.Start + 1
		} else {
			n--
		}
	}
	return c, shown
}

// guess is a knob value near target tokens, at about 3.5 bytes a token, to start the fit.
func (r *ranked) guess(target int) float64 {
	want := 3.5 * float64(target)
	n, bytes := 0, 0.0
	for i, ch := range r.chunks {
		b := float64(len(ch.Text))
		if bytes+b >= want {
			if !r.partial {
				return float64(n + 1)
			}
			return float64(n) + float64(r.lines[i])*(want-bytes)/b
		}
		bytes += b
		if r.partial {
			n += r.lines[i]
		} else {
			n++
		}
	}
	return float64(n)
}

// fit shows as much ranked text as fits target tokens (±tolerance), returning the context, chunks shown and the fit.
func (r *ranked) fit(tokenizer string, target int, p specs.FitParams) (contexts.Context, int, budget.Result, error) {
	var best contexts.Context
	res, err := budget.Fit(budget.Problem{Target: target, Tolerance: p.Tolerance, MaxEvals: p.MaxEvals,
		Knob: budget.Knob{Lo: 0, Hi: float64(r.max()), Integer: true, Guess: r.guess(target)}},
		func(x float64) (int, error) {
			c, _ := r.take(int(x))
			return countTokens(tokenizer, c.Render())
		})
	if err != nil {
		return best, 0, res, err
	}
	best, shown := r.take(int(res.Knob))
	return best, shown, res, nil
}
