package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"ctxlab/internal/jsonl"
)

// Row is one results row. Activities contribute fields, so a row is an open map; the fields every row has are
// named by the constants below. Each field an activity sets is declared, with its kind, by that activity's catalog
// entry (specs.ActivityInfo.Fields); the Issue workflow adds instance_id, method, model, error and error_kind.
type Row map[string]any

// Fields every row carries (null when the step that sets them did not run).
const (
	FieldInstance      = "instance_id"
	FieldMethod        = "method"
	FieldModel         = "model"
	FieldContextTokens = "context_tokens"
	FieldRho           = "rho"
	FieldEpsilon       = "epsilon"
	FieldPatchApplied  = "patch_applied"
	FieldResolved      = "resolved"
	FieldError         = "error"
)

// FieldModelServed is the model the endpoint named as the one that answered, on rows where it is not the spec's
// model id (activities' usageRow).
const FieldModelServed = "model_served"

// Fields that rows carry when a method's steps set them (CQ2-CARE, the baselines, budget fitting, grading).
const (
	FieldFilesSelected    = "files_selected"    // how many files the method put in its context
	FieldFallback         = "fallback"          // the method fell back (e.g. empty intersection -> L0)
	FieldLocPrecision     = "loc_precision"     // localization against the gold files
	FieldLocRecall        = "loc_recall"        //
	FieldLocF1            = "loc_f1"            //
	FieldModelCalls       = "model_calls"       // paid or offline model calls of the row's steps
	FieldPromptTokens     = "prompt_tokens"     //
	FieldCompletionTokens = "completion_tokens" //
	FieldCostUSD          = "cost_usd"          //
	FieldBudget           = "budget_tokens"     // B_i, the anchor's context tokens on the issue
	FieldBudgetEvals      = "budget_evals"      // knob evaluations budget fitting needed
	FieldBudgetError      = "budget_error"      // why a budget could not be met, when it could not
	FieldGoldLineShare    = "gold_line_share"   // share of context lines in gold files

	FieldBudgetAnchor     = "budget_anchor_tokens" // the anchor's context tokens, before the multiplier
	FieldBudgetMultiplier = "budget_multiplier"    // budget_tokens = multiplier x budget_anchor_tokens
	FieldBudgetKnob       = "budget_knob"          // the fitted knob: lines or chunks shown, or a compressor's rate
	FieldBudgetReached    = "budget_reached"       // the context landed within the tolerance of budget_tokens
	FieldChunksShown      = "chunks_shown"         // ranked chunks a retriever put in its context
	FieldTemplateShown    = "template_shown"       // the context shows an issue template (the lexical trap)
	// FieldTokenizer names the tokenizer that counted context_tokens and the budget: an encoding (o200k_base,
	// cl100k_base) or "endpoint:MODEL", the model's server's own (specs.ResolveTokenizer).
	FieldTokenizer = "tokenizer"
)

// Fields that split a row's usage by price: prompt tokens read from and written to the provider's prompt cache (part
// of prompt_tokens), and cost_usd split into input (cache writes included), cached input and output.
const (
	FieldCachedTokens     = "cached_tokens"
	FieldCacheWriteTokens = "cache_write_tokens"
	FieldCostInputUSD     = "cost_input_usd"
	FieldCostCachedUSD    = "cost_cached_usd"
	FieldCostOutputUSD    = "cost_output_usd"
)

// Summed lists the fields that add up over a row's steps (each step's model calls, tokens and cost) instead of
// taking the last step's value.
var Summed = []string{FieldModelCalls, FieldPromptTokens, FieldCompletionTokens, FieldCostUSD,
	FieldCachedTokens, FieldCacheWriteTokens, FieldCostInputUSD, FieldCostCachedUSD, FieldCostOutputUSD}

// Required lists the fields every row has.
var Required = []string{FieldInstance, FieldMethod, FieldModel, FieldContextTokens, FieldRho, FieldEpsilon,
	FieldPatchApplied, FieldResolved, FieldError}

// Key identifies a row: one per instance, method and model.
type Key struct{ Instance, Method, Model string }

// Key returns the row's identity.
func (r Row) Key() Key {
	return Key{r.String(FieldInstance), r.String(FieldMethod), r.String(FieldModel)}
}

// String returns a string field, or "".
func (r Row) String(k string) string {
	s, _ := r[k].(string)
	return s
}

// Float returns a numeric field; false when absent or null.
func (r Row) Float(k string) (float64, bool) {
	switch v := r[k].(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

// Bool returns a boolean field; false when absent or null.
func (r Row) Bool(k string) (value, ok bool) {
	b, ok := r[k].(bool)
	return b, ok
}

// Store appends rows to a results.jsonl file, once per key, safely across processes.
type Store struct {
	Path string
}

// Append writes the rows whose key the file does not hold yet and returns how many it wrote. A retried activity
// calling it again writes nothing twice. The keys already in the file are kept in memory between calls (see
// keyIndex): under the lock only the bytes other processes appended since the last call are read.
func (s Store) Append(rows []Row) (int, error) {
	f, idx, err := s.lockIndexed()
	if err != nil {
		return 0, err
	}
	defer unlock(f)
	defer idx.mu.Unlock()
	var buf bytes.Buffer
	var added []Key
	seen := map[Key]bool{}
	for _, r := range rows {
		k := r.Key()
		if idx.keys[k] || seen[k] {
			continue
		}
		seen[k] = true
		b, err := json.Marshal(r)
		if err != nil {
			return 0, fmt.Errorf("results: row %v: %w", k, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
		added = append(added, k)
	}
	if len(added) == 0 {
		return 0, nil
	}
	if _, err := f.WriteAt(buf.Bytes(), idx.off); err != nil {
		idx.reset() // part of buf may be in the file: read it again next time
		return 0, fmt.Errorf("results: writing %s: %w", s.Path, err)
	}
	idx.wrote(f, buf.Bytes(), added)
	return len(added), f.Sync()
}

// BadLine is a line of a results file that is not a row.
type BadLine struct {
	Line int
	Err  error
}

// ReadFile reads every row of a results file. Lines that are not rows (a torn last line after a crash) are
// returned separately, never silently dropped.
func ReadFile(path string) ([]Row, []BadLine, error) {
	if err := RegularOrAbsent(path); err != nil {
		return nil, nil, fmt.Errorf("results: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	return read(f)
}

func read(r io.Reader) ([]Row, []BadLine, error) {
	var rows []Row
	var bad []BadLine
	_, err := jsonl.Scan(r, jsonl.ReadPartial, func(line int, b []byte) error {
		var row Row
		if err := json.Unmarshal(b, &row); err != nil {
			bad = append(bad, BadLine{Line: line, Err: err})
			return nil
		}
		if !row.keyed() {
			bad = append(bad, BadLine{Line: line, Err: errors.New("row lacks instance_id or method")})
			return nil
		}
		rows = append(rows, row)
		return nil
	})
	return rows, bad, err
}

// keyed reports whether the row has the fields of its key that every row must have.
func (r Row) keyed() bool { return r.String(FieldInstance) != "" && r.String(FieldMethod) != "" }
