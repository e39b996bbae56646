package specs

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Kind declares one activity kind a step may name, once: its name, queue, params struct P with its defaults, the row
// fields it owns and the model task it asks. The catalog entry (ActivityInfo), the strict params decoder, the
// step's registration (steps.registerStep in activities/steps) and the Jsonnet library's defaults all read it.
type Kind[P any] struct {
	Name string
	// Queue is the task queue kind the activity runs on (QueueKinds).
	Queue string
	// Summary is one line for `starter compile` and error messages.
	Summary string
	// Cheap activities take well under a second even on a large repository and need nothing a queue's workers
	// have that the workflow worker lacks: the Issue workflow runs them in process (see RunsLocally).
	Cheap bool
	// NoEndpoint, when set, reports whether a step with these params calls no endpoint (the offline model, the
	// fake compressor): such a step is as cheap as a Cheap one, and runs in process too.
	NoEndpoint func(P) bool
	// Inputs are the input names the activity requires; Optional ones may be left out.
	Inputs, Optional []string
	// UsesModel activities get the model they run under as the "model" parameter, so that the same step under two
	// models is two nodes, and the same step under one model in two methods is one.
	UsesModel bool
	// UsesTokenizer activities get the experiment's tokenizer as the "tokenizer" parameter.
	UsesTokenizer bool
	// UsesGrading activities get the experiment's grading settings as the "grading" parameter.
	UsesGrading bool
	// ReplacesContext marks an activity whose context replaces the contexts its method's earlier steps built
	// (ActivityInfo.ReplacesContext).
	ReplacesContext bool
	// Defaults is the params value the activity starts from before decoding a step's params. Activities copy it
	// by assignment: keep maps and pointers out.
	Defaults P
	// Fields are the results row fields the activity owns (ActivityInfo.Fields): Rows of its handles, and shared
	// sets such as UsageFields.
	Fields []RowField
	// Task is the model task the activity asks (llm.Request.Task), when it calls a model.
	Task string
	// CodeVersion, when set, is the version of what the step computes from the same inputs, in every node memo key
	// of the kind: change it when that changes (a grader's test commands or log parsers, a new row field), so that
	// nodes memoized by the old code run again. Setting it on a kind that had none runs its finished nodes again.
	CodeVersion string
}

// Declare registers a kind in the Catalog and returns it; it panics on a malformed declaration or a name taken.
// Kinds of ctxlab are declared in this package; a test may declare its own (and delete it from Catalog after).
func Declare[P any](k Kind[P]) Kind[P] {
	register(k.Info())
	return k
}

// Info is the kind's catalog entry.
func (k Kind[P]) Info() ActivityInfo {
	info := ActivityInfo{Name: k.Name, Queue: k.Queue, Cheap: k.Cheap, Inputs: k.Inputs, Optional: k.Optional,
		UsesModel: k.UsesModel, UsesTokenizer: k.UsesTokenizer, UsesGrading: k.UsesGrading, Summary: k.Summary,
		Params: reflect.TypeFor[P](), Defaults: k.Defaults, Fields: k.Fields, ReplacesContext: k.ReplacesContext,
		Task: k.Task, CodeVersion: k.CodeVersion}
	if noEndpoint := k.NoEndpoint; noEndpoint != nil {
		// Leniently (json.Unmarshal decodes what it can past a mistyped value): this runs in the Issue workflow on
		// every node, also on replay of nodes an older build planned, and must answer as the map reading it
		// replaced did.
		info.NoEndpoint = func(params map[string]any) bool {
			var p P
			b, err := json.Marshal(params)
			if err != nil {
				return false
			}
			_ = json.Unmarshal(b, &p)
			return noEndpoint(p)
		}
	}
	return info
}

// Decode decodes a step's params into the kind's params struct, starting from its Defaults, strictly: a param the
// struct lacks or a value of the wrong type is an error, never a silent default.
// A value outside its field's declaration (an Enum's values, a range, a check) is an error too, naming every one.
func (k Kind[P]) Decode(params map[string]any) (P, error) {
	v, err := decodeParams(reflect.TypeFor[P](), k.Defaults, params)
	p := v.Interface().(P)
	if err != nil {
		return p, err
	}
	if problems := checkValues(k.Name, v, true); len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, pp := range problems {
			msgs[i] = pp.Msg
		}
		return p, errors.New(strings.Join(msgs, "; "))
	}
	return p, nil
}

// Field is a typed handle on one results row field: steps set it, readers get it, by the handle rather than by its
// name. Each is declared once, beside the kind that owns it (or with a shared set).
type Field[T any] struct{ RowField }

// AnyField is a handle of any type, as a kind's Fields list takes them (Rows).
type AnyField interface{ Declaration() RowField }

// Declaration is the field's row declaration.
func (f Field[T]) Declaration() RowField { return f.RowField }

// IntField declares an integer row field.
func IntField(name string) Field[int] { return Field[int]{RowField{Name: name, Kind: KindInt}} }

// FloatField declares a number row field.
func FloatField(name string) Field[float64] {
	return Field[float64]{RowField{Name: name, Kind: KindFloat}}
}

// StringField declares a string row field.
func StringField(name string) Field[string] {
	return Field[string]{RowField{Name: name, Kind: KindString}}
}

// BoolField declares a boolean row field.
func BoolField(name string) Field[bool] { return Field[bool]{RowField{Name: name, Kind: KindBool}} }

// ListField declares a row field holding a list of strings.
func ListField(name string) Field[[]string] {
	return Field[[]string]{RowField{Name: name, Kind: KindList}}
}

// InContext marks the field as describing the context a step built (RowField.Context).
func (f Field[T]) InContext() Field[T] {
	f.Context = true
	return f
}

// Required marks the field as one every row has (RowField.Required).
func (f Field[T]) Required() Field[T] {
	f.RowField.Required = true
	return f
}

// Shown declares how the readers of rows present the field (RowField.Show).
func (f Field[T]) Shown(p Presentation) Field[T] {
	f.Show = &p
	return f
}

// Set sets the field on a row.
func (f Field[T]) Set(row map[string]any, v T) { row[f.Name] = v }

// SetPtr sets the field on a row to *v, or to null when v is nil (a value that may be undefined).
func (f Field[T]) SetPtr(row map[string]any, v *T) { row[f.Name] = v }

// Get returns the field's value on a row: as a step set it, or as JSON decodes it (float64 for an int, []any for
// a list); false when the row lacks it, holds null or a value of another type.
func (f Field[T]) Get(row map[string]any) (T, bool) {
	var zero T
	v, ok := row[f.Name]
	if !ok || v == nil {
		return zero, false
	}
	if t, ok := v.(T); ok {
		return t, true
	}
	if p, ok := v.(*T); ok {
		if p == nil {
			return zero, false
		}
		return *p, true
	}
	out := reflect.New(reflect.TypeFor[T]()).Elem()
	switch x := v.(type) {
	case float64: // JSON's number, for an int field
		if out.CanInt() && x == float64(int64(x)) {
			out.SetInt(int64(x))
			return out.Interface().(T), true
		}
	case int: // an int set on a float field
		if out.CanFloat() {
			out.SetFloat(float64(x))
			return out.Interface().(T), true
		}
	case []any: // JSON's array, for a list field
		if out.Kind() != reflect.Slice {
			return zero, false
		}
		list := reflect.MakeSlice(out.Type(), 0, len(x))
		for _, e := range x {
			ev := reflect.ValueOf(e)
			if !ev.IsValid() || !ev.Type().AssignableTo(out.Type().Elem()) {
				return zero, false
			}
			list = reflect.Append(list, ev)
		}
		return list.Interface().(T), true
	}
	return zero, false
}

// Rows lists handles as row declarations, for a kind's Fields.
func Rows(fields ...AnyField) []RowField {
	out := make([]RowField, len(fields))
	for i, f := range fields {
		out[i] = f.Declaration()
	}
	return out
}

// checkQueue refuses a kind on a queue no worker serves.
func checkQueue(a ActivityInfo) error {
	if _, err := QueueOf(a.Queue); err != nil {
		return fmt.Errorf("activity %s: %v", a.Name, err)
	}
	return nil
}
