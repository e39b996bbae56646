package specs

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestCatalogParamsTakeInjectedParams: the plan injects model, tokenizer and grading into the params of the
// activities that use them, so each such activity's params struct must have the field, or its own plan would fail
// the strict decode.
func TestCatalogParamsTakeInjectedParams(t *testing.T) {
	for _, name := range ActivityNames() {
		info := Catalog[name]
		b, err := json.Marshal(reflect.New(info.Params).Interface())
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		for param, injected := range map[string]bool{"model": info.UsesModel, "tokenizer": info.UsesTokenizer,
			"grading": info.UsesGrading} {
			if _, has := fields[param]; injected && !has {
				t.Errorf("%s: the plan injects %q but %s has no such field", name, param, info.Params)
			}
		}
	}
}

// TestRegisterNeedsParams: a catalog entry without a params struct cannot be registered.
func TestRegisterNeedsParams(t *testing.T) {
	for _, params := range []reflect.Type{nil, reflect.TypeFor[map[string]any]()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("params %v: registered", params)
				}
			}()
			register(ActivityInfo{Name: "test_only", Queue: QueueCPU, Params: params})
		}()
	}
	if _, ok := Catalog["test_only"]; ok {
		t.Error("test_only is in the catalog")
	}
}

// TestDefaultParams: every activity has an entry, with the defaults the catalog holds in their JSON form.
func TestDefaultParams(t *testing.T) {
	d, err := DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != len(Catalog) {
		t.Errorf("%d activities, want %d", len(d), len(Catalog))
	}
	assemble, _ := d["assemble"].(map[string]any)
	if assemble["total_cap"] != float64(AssembleDefaults.TotalCap) || assemble["tokenizer"] != FallbackTokenizer {
		t.Errorf("assemble defaults %v", d["assemble"])
	}
	if trim, _ := d["trim"].(map[string]any); len(trim) != 1 || trim["count"] != 0.0 {
		t.Errorf("trim defaults %v, want its zero params", d["trim"])
	}
}

// TestRegisterRefusesConflictingRowFields: a row field means one thing in every row, so an activity that declares a
// field another activity declares with another kind or Context mark, a field twice, or an unknown kind, is refused.
func TestRegisterRefusesConflictingRowFields(t *testing.T) {
	for _, fields := range [][]RowField{
		{{Name: "files_shown", Kind: KindFloat}}, // retrieve and others: int
		{{Name: "loc_f1", Kind: KindFloat}},      // intersect, trim: Context
		{{Name: "x_count", Kind: KindInt}, {Name: "x_count", Kind: KindInt}},
		{{Name: "x_count", Kind: "integer"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("fields %v: registered", fields)
				}
			}()
			register(ActivityInfo{Name: "test_only", Queue: QueueCPU, Params: reflect.TypeFor[CheckoutParams](),
				Fields: fields})
		}()
	}
	if _, ok := Catalog["test_only"]; ok {
		t.Error("test_only is in the catalog")
	}
}

// TestRowFieldAccepts: values of each kind, as activities set them and as JSON decodes them.
func TestRowFieldAccepts(t *testing.T) {
	share := 0.5
	var none *float64
	for _, tc := range []struct {
		kind FieldKind
		v    any
		want bool
	}{
		{KindInt, 3, true}, {KindInt, 3.0, true}, {KindInt, 3.5, false}, {KindInt, "3", false},
		{KindFloat, 0.5, true}, {KindFloat, 2, true}, {KindFloat, &share, true}, {KindFloat, none, true},
		{KindFloat, true, false}, {KindString, "x", true}, {KindString, 1, false},
		{KindBool, false, true}, {KindBool, 0, false}, {KindList, []string{"a"}, true},
		{KindList, []any{"a"}, true}, {KindList, "a", false}, {KindList, []byte("a"), false},
		{KindString, nil, true},
	} {
		if got := (RowField{Name: "f", Kind: tc.kind}).Accepts(tc.v); got != tc.want {
			t.Errorf("%s accepts %#v: %v, want %v", tc.kind, tc.v, got, tc.want)
		}
	}
}

// TestContextResetFieldsKeepTheRows: the fields a replacing context step resets, derived from the declarations,
// are those the hand-kept list (activities' inheritedFields) reset before the declarations existed: a field added
// to or dropped from it changes which fields every retriever, compressor and corruption row names. Change this list
// only with a change to the rows that is meant.
func TestContextResetFieldsKeepTheRows(t *testing.T) {
	before := []string{
		"budget_tokens", "budget_evals", "budget_error", "budget_anchor_tokens", "budget_multiplier", "budget_knob",
		"budget_reached", "chunks_shown", "template_shown", "files_selected", "fallback", "loc_precision",
		"loc_recall", "loc_f1", "compress_rate", "compressor_calls", "compressor_tokens_in", "compressor_tokens_out",
		"embedding_tokens", "embeddings_cached", "corrupt_tokens_deleted", "corrupt_lines_deleted",
		"corrupt_target_epsilon", "corrupt_lines_changed",
		// listwise_rerank's, meant: a context step after it resets them as it resets retrieve's.
		"listwise_candidates", "listwise_windows", "listwise_unparsed", "listwise_incomplete",
	}
	slices.Sort(before)
	if got := ContextResetFields(); !slices.Equal(got, before) {
		t.Errorf("context fields %v, want %v", got, before)
	}
	var replacing []string
	for _, name := range ActivityNames() {
		if Catalog[name].ReplacesContext {
			replacing = append(replacing, name)
		}
	}
	if !slices.Equal(replacing, []string{"compress", "corrupt", "listwise_rerank", "retrieve"}) {
		t.Errorf("activities that replace the context: %v", replacing)
	}
}

// TestColumnsAreWellDeclared: the columns row fields declare order each table one way (no two share an Order),
// show a row's own value only in the tables of rows, leave the median to the report (results links no statistics
// library) and format every number.
func TestColumnsAreWellDeclared(t *testing.T) {
	perRow := map[Table]bool{PairsTable: true, RowTable: true}
	for _, table := range []Table{SummaryTable, MethodsTable, PairsTable, RowTable} {
		cols := Columns(table)
		if len(cols) == 0 {
			t.Errorf("table %s: no declared column", table)
		}
		orders := map[int]string{}
		for _, c := range cols {
			at := fmt.Sprintf("table %s, column %q of %s", table, c.Heading(), c.Field.Name)
			if other, dup := orders[c.Order]; dup {
				t.Errorf("%s: Order %d taken by %s", at, c.Order, other)
			}
			orders[c.Order] = c.Field.Name
			if (c.Stat == Value) != perRow[table] {
				t.Errorf("%s: stat %d in a table %s rows", at, c.Stat, map[bool]string{true: "of", false: "summarizing"}[perRow[table]])
			}
			if c.Stat == Median && table == SummaryTable {
				t.Errorf("%s: summary.md cannot show a median", at)
			}
			if c.Format == "" && !(c.Stat == Value && c.Field.Kind == KindBool) {
				t.Errorf("%s: no Format", at)
			}
		}
	}
	seen := map[int]bool{}
	for _, f := range Features() {
		if seen[f.Order] {
			t.Errorf("feature %s: Order %d taken", f.Term(f.Field), f.Order)
		}
		seen[f.Order] = true
	}
	if got := strings.Join(RequiredFields(), ","); got != "context_tokens,epsilon,patch_applied,resolved,rho" {
		t.Errorf("required fields %s", got)
	}
}
