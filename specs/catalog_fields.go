package specs

import (
	"fmt"
	"maps"
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
	// Required marks a field every row has, null until a step sets it (results.Required).
	Required bool
	// Show says how the readers of rows present the field (nil: only audits and exports read it): results'
	// summary, the report's tables, its HTML and its regression iterate over the declarations that have one,
	// instead of naming each field.
	Show *Presentation
}

// Presentation is how the readers of rows present a field (RowField.Show).
type Presentation struct {
	// Columns are the field's columns in the tables of rows and of per-method statistics.
	Columns []Column
	// Feature, when set, makes the field a term of the report's default regression.
	Feature *Feature
}

// Table names a table whose columns the row fields declare (Column.Table); each table's own columns (the method,
// the model, the outcome's interval ...) are its reader's.
type Table string

// The tables whose columns row fields declare.
const (
	// SummaryTable is summary.md's table: per (method, model), after its method, model and n.
	SummaryTable Table = "summary"
	// MethodsTable is the report's per-method table (tables/methods.*), after the resolve rate and its interval.
	MethodsTable Table = "methods"
	// PairsTable is the report's table of disagreements (tables/disagreements.*): each side's value of the field,
	// headed "HEAD A" and "HEAD B".
	PairsTable Table = "disagreements"
	// RowTable is report.html's table of an instance's rows: one line per row, after its method and outcome.
	RowTable Table = "instance rows"
)

// Stat is how a column shows a field: a row's own value, or a statistic over a method's rows.
type Stat int

// The statistics a column may show.
const (
	// Value is the row's own value (PairsTable and RowTable columns): a number as Format says, a bool as yes or no.
	Value Stat = iota
	// Mean is the mean over the rows that carry the field.
	Mean
	// Median is the median over the rows that carry the field.
	Median
	// PctTrue is the percentage of the rows carrying the field where it is true.
	PctTrue
	// PctZero is the percentage of the rows carrying the field where it is 0.
	PctZero
	// PctOfRows is the percentage of all the rows where the field is true: a row without it counts as false.
	PctOfRows
	// PctOfRowsIfAny is PctOfRows, missing when no row carries the field.
	PctOfRowsIfAny
)

// Column is one column a field adds to a table.
type Column struct {
	Table Table
	// Order places the column among the table's declared columns (ascending); they follow the table's own.
	Order int
	// Head is the column's heading; empty, the field's name.
	Head string
	Stat Stat
	// Format is the fmt verb of a number ("%.3f").
	Format string
	// Legend explains the column under the table (summary.md's last line), when it needs it.
	Legend string
}

// Feature is a field's term in the report's default regression.
type Feature struct {
	// Order places the term among the default features (ascending).
	Order int
	// Name is the term's name when it is not the field's (Log1p terms).
	Name string
	// Log1p makes the term log(1 + value), for counts spread over orders of magnitude; a negative value is missing.
	Log1p bool
}

// Term is the feature's name for field f: its Name, or the field's.
func (x Feature) Term(f RowField) string {
	if x.Name != "" {
		return x.Name
	}
	return f.Name
}

// Row fields that several activities own, and their sets.
var (
	// The usage of model calls (the steps' callModel); the Issue workflow sums them over a row's steps.
	ModelCalls       = IntField("model_calls")
	PromptTokens     = IntField("prompt_tokens")
	CompletionTokens = IntField("completion_tokens")
	CostUSD          = FloatField("cost_usd").Shown(Presentation{Columns: []Column{
		{Table: SummaryTable, Order: 9, Head: "mean cost $", Stat: Mean, Format: "%.4f",
			Legend: "cost: model calls priced with the spec's price table"},
		{Table: MethodsTable, Order: 8, Head: "cost/issue $", Stat: Mean, Format: "%.3f"}}})
	// Prompt tokens read from and written to the provider's prompt cache, and cost_usd split by price (input,
	// cache writes included; cached input; output).
	CachedTokens     = IntField("cached_tokens")
	CacheWriteTokens = IntField("cache_write_tokens")
	CostInputUSD     = FloatField("cost_input_usd")
	CostCachedUSD    = FloatField("cost_cached_usd")
	CostOutputUSD    = FloatField("cost_output_usd")
	// UsageFields are what every model call adds; the Issue workflow sums them over a row's steps (results.Summed).
	UsageFields = Rows(ModelCalls, PromptTokens, CompletionTokens, CostUSD, CachedTokens, CacheWriteTokens,
		CostInputUSD, CostCachedUSD, CostOutputUSD)

	// ModelServed is set when the endpoint names another model than the spec's id as the one that answered
	// (the steps' usageRow); the last step that sets it wins.
	ModelServed  = StringField("model_served")
	ServedFields = Rows(ModelServed)

	// FilesShown is what every step that stores a context sets.
	FilesShown        = IntField("files_shown")
	ContextStepFields = Rows(FilesShown)

	// A file selection's (intersect, trim), scored against the gold files.
	FilesSelected = IntField("files_selected").InContext()
	Fallback      = BoolField("fallback").InContext().Shown(Presentation{Columns: []Column{
		{Table: SummaryTable, Order: 8, Head: "fallback %", Stat: PctTrue, Format: "%.1f"},
		{Table: MethodsTable, Order: 9, Head: "fallback %", Stat: PctTrue, Format: "%.1f"}}})
	LocPrecision = FloatField("loc_precision").InContext()
	LocRecall    = FloatField("loc_recall").InContext()
	LocF1        = FloatField("loc_f1").InContext().Shown(Presentation{Columns: []Column{
		{Table: SummaryTable, Order: 6, Head: "mean loc F1", Stat: Mean, Format: "%.3f",
			Legend: "loc F1: selected files against the gold files"},
		{Table: MethodsTable, Order: 10, Head: "loc F1", Stat: Mean, Format: "%.3f"}}})
	// Not reset by a replacing context (it never was): rows of retrievers and corruptions do not name it.
	LocF1Untrimmed  = FloatField("loc_f1_untrimmed")
	SelectionFields = Rows(FilesSelected, Fallback, LocPrecision, LocRecall, LocF1, LocF1Untrimmed)

	// What a step fitted to a budget records (the steps' fitRow).
	BudgetTokens       = IntField("budget_tokens").InContext()
	BudgetEvals        = IntField("budget_evals").InContext()
	BudgetError        = StringField("budget_error").InContext()
	BudgetAnchorTokens = IntField("budget_anchor_tokens").InContext()
	BudgetMultiplier   = FloatField("budget_multiplier").InContext()
	BudgetKnob         = FloatField("budget_knob").InContext()
	BudgetReached      = BoolField("budget_reached").InContext()
	FitFields          = Rows(BudgetTokens, BudgetEvals, BudgetError, BudgetAnchorTokens, BudgetMultiplier,
		BudgetKnob, BudgetReached)

	// TemplateShown says whether a baseline's context shows an issue template (the lexical trap).
	TemplateShown = BoolField("template_shown").InContext()

	// What a model's answer read as a patch records (patch, agent_patch): the edit could not be read, hunks whose
	// line counts were repaired.
	PatchParseError = StringField("patch_parse_error")
	PatchRecounted  = IntField("patch_recounted")
)

// DeclaredFields lists every row field the catalog's kinds declare, once each, sorted by name.
func DeclaredFields() []RowField {
	byName := map[string]RowField{}
	// Sorted below: the order is never observed.
	//workflowcheck:ignore
	for _, info := range Catalog {
		for _, f := range info.Fields {
			byName[f.Name] = f
		}
	}
	out := make([]RowField, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

// FieldColumn is a column of a table with the field it shows.
type FieldColumn struct {
	Column
	Field RowField
}

// Heading is the column's heading: its Head, or its field's name.
func (c FieldColumn) Heading() string {
	if c.Head != "" {
		return c.Head
	}
	return c.Field.Name
}

// Columns lists the columns the declared row fields add to table, in their Order (then by field name).
func Columns(table Table) []FieldColumn {
	var out []FieldColumn
	for _, f := range DeclaredFields() {
		if f.Show == nil {
			continue
		}
		for _, c := range f.Show.Columns {
			if c.Table == table {
				out = append(out, FieldColumn{Column: c, Field: f})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b FieldColumn) int { return a.Order - b.Order })
	return out
}

// Features lists the declared regression terms in their Order: each with the field it reads.
func Features() []FieldFeature {
	var out []FieldFeature
	for _, f := range DeclaredFields() {
		if f.Show != nil && f.Show.Feature != nil {
			out = append(out, FieldFeature{Feature: *f.Show.Feature, Field: f})
		}
	}
	slices.SortStableFunc(out, func(a, b FieldFeature) int { return a.Order - b.Order })
	return out
}

// FieldFeature is a regression term with the field it reads.
type FieldFeature struct {
	Feature
	Field RowField
}

// RequiredFields lists the names of the declared fields every row has (RowField.Required), sorted.
func RequiredFields() []string {
	var out []string
	for _, f := range DeclaredFields() {
		if f.Required {
			out = append(out, f.Name)
		}
	}
	return out
}

// Fields concatenates field sets into one declaration.
func Fields(sets ...[]RowField) []RowField {
	var out []RowField
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}

// FieldOf returns the activity's declaration of a row field; false when the activity does not own it (or is not
// in the catalog).
func FieldOf(activity, name string) (RowField, bool) {
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
		f, ok := FieldOf(activity, k)
		if !ok {
			return fmt.Errorf("step %s: row field %q is not declared by activity %s (declare it in its catalog "+
				"kind's Fields)", step, k, activity)
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
			if g, ok := FieldOf(o.Name, f.Name); ok && g != f {
				return fmt.Errorf("activity %s declares row field %q as %+v, activity %s as %+v", a.Name, f.Name,
					f, o.Name, g)
			}
		}
	}
	return nil
}
