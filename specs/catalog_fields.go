package specs

import (
	"fmt"
	"reflect"
	"slices"
)

// FieldKind is the JSON type a row field holds.
type FieldKind string

// The kinds of row fields. Any field may also be null.
const (
	KindInt    FieldKind = "int"
	KindFloat  FieldKind = "float" // an integral value is a float too
	KindString FieldKind = "string"
	KindBool   FieldKind = "bool"
	KindList   FieldKind = "list" // a JSON array (of strings, in today's rows)
)

// RowField is one results row field an activity owns (ActivityInfo.Fields).
type RowField struct {
	Name string
	Kind FieldKind
	// Context marks a field that describes the context a step built (its selection, budget fit, retrieval,
	// compression or corruption): an activity that ReplacesContext resets it before its own fields are merged.
	Context bool
}

// Field sets that several activities own.
var (
	// UsageFields are what every model call adds (activities' callModel); the Issue workflow sums them over a row's
	// steps (results.Summed).
	UsageFields = []RowField{
		{Name: "model_calls", Kind: KindInt}, {Name: "prompt_tokens", Kind: KindInt},
		{Name: "completion_tokens", Kind: KindInt}, {Name: "cost_usd", Kind: KindFloat},
		// Prompt tokens read from and written to the provider's prompt cache, and cost_usd split by price (input,
		// cache writes included; cached input; output).
		{Name: "cached_tokens", Kind: KindInt}, {Name: "cache_write_tokens", Kind: KindInt},
		{Name: "cost_input_usd", Kind: KindFloat}, {Name: "cost_cached_usd", Kind: KindFloat},
		{Name: "cost_output_usd", Kind: KindFloat},
	}
	// ServedFields are what a model call adds when the endpoint names another model than the spec's id as the
	// one that answered (activities' usageRow); the last step that sets it wins.
	ServedFields = []RowField{{Name: "model_served", Kind: KindString}}
	// ContextStepFields are what every step that stores a context sets.
	ContextStepFields = []RowField{{Name: "files_shown", Kind: KindInt}}
	// SelectionFields are a file selection's (intersect, trim), scored against the gold files.
	SelectionFields = []RowField{
		{Name: "files_selected", Kind: KindInt, Context: true}, {Name: "fallback", Kind: KindBool, Context: true},
		{Name: "loc_precision", Kind: KindFloat, Context: true}, {Name: "loc_recall", Kind: KindFloat, Context: true},
		{Name: "loc_f1", Kind: KindFloat, Context: true},
		// Not reset by a replacing context (it never was): rows of retrievers and corruptions do not name it.
		{Name: "loc_f1_untrimmed", Kind: KindFloat},
	}
	// FitFields are what a step fitted to a budget records (activities' fitRow).
	FitFields = []RowField{
		{Name: "budget_tokens", Kind: KindInt, Context: true}, {Name: "budget_evals", Kind: KindInt, Context: true},
		{Name: "budget_error", Kind: KindString, Context: true},
		{Name: "budget_anchor_tokens", Kind: KindInt, Context: true},
		{Name: "budget_multiplier", Kind: KindFloat, Context: true},
		{Name: "budget_knob", Kind: KindFloat, Context: true}, {Name: "budget_reached", Kind: KindBool, Context: true},
	}
	// TemplateShownField says whether a baseline's context shows an issue template (the lexical trap).
	TemplateShownField = RowField{Name: "template_shown", Kind: KindBool, Context: true}
)

// Fields concatenates field sets into one declaration.
func Fields(sets ...[]RowField) []RowField {
	var out []RowField
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}

// Field returns the activity's declaration of a row field; false when the activity does not own it (or is not in
// the catalog).
func Field(activity, name string) (RowField, bool) {
	for _, f := range Catalog[activity].Fields {
		if f.Name == name {
			return f, true
		}
	}
	return RowField{}, false
}

// ContextResetFields lists, sorted, the fields any activity marks Context: what a step that ReplacesContext resets.
func ContextResetFields() []string {
	var out []string
	// Sorted below: the order is never observed (the Issue workflow calls this).
	//workflowcheck:ignore
	for _, info := range Catalog {
		for _, f := range info.Fields {
			if f.Context && !slices.Contains(out, f.Name) {
				out = append(out, f.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// CheckRow checks a node's row fragment against its activity's declaration: every field must be declared and
// hold a value of its kind (or null). The error names the step and the first field at fault, in sorted order.
func CheckRow(activity, step string, fragment map[string]any) error {
	names := make([]string, 0, len(fragment))
	for k := range fragment {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		f, ok := Field(activity, k)
		if !ok {
			return fmt.Errorf("step %s: row field %q is not declared by activity %s (declare it in its catalog "+
				"entry's Fields)", step, k, activity)
		}
		if !f.Accepts(fragment[k]) {
			return fmt.Errorf("step %s: row field %q holds %T, but activity %s declares it %s", step, k,
				fragment[k], activity, f.Kind)
		}
	}
	return nil
}

// Accepts reports whether v (a Go value an activity sets, or its JSON-decoded form) is of the field's kind.
func (f RowField) Accepts(v any) bool {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return true
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return true // null
	}
	switch k := rv.Kind(); f.Kind {
	case KindInt:
		switch {
		case rv.CanInt(), rv.CanUint():
			return true
		case rv.CanFloat(): // JSON decodes numbers as float64
			x := rv.Float()
			return x == float64(int64(x))
		}
	case KindFloat:
		return rv.CanInt() || rv.CanUint() || rv.CanFloat()
	case KindString:
		return k == reflect.String
	case KindBool:
		return k == reflect.Bool
	case KindList:
		return (k == reflect.Slice || k == reflect.Array) && rv.Type().Elem().Kind() != reflect.Uint8
	}
	return false
}

// checkFields refuses a declaration whose fields are malformed, repeated, or declared by another activity with
// another kind or Context marker: one field name means one thing in every row.
func checkFields(a ActivityInfo, others map[string]ActivityInfo) error {
	seen := map[string]bool{}
	for _, f := range a.Fields {
		switch f.Kind {
		case KindInt, KindFloat, KindString, KindBool, KindList:
		default:
			return fmt.Errorf("activity %s: row field %q has unknown kind %q", a.Name, f.Name, f.Kind)
		}
		if f.Name == "" || seen[f.Name] {
			return fmt.Errorf("activity %s: row field %q is empty or declared twice", a.Name, f.Name)
		}
		seen[f.Name] = true
		for _, o := range others {
			if g, ok := Field(o.Name, f.Name); ok && g != f {
				return fmt.Errorf("activity %s declares row field %q as %+v, activity %s as %+v", a.Name, f.Name,
					f, o.Name, g)
			}
		}
	}
	return nil
}
