package jsonnet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"ctxlab/specs"
)

// decode turns the evaluated spec into an Experiment strictly: every unknown field and every value of the wrong type
// is a ValidationError with its path, all of them, not just the first.
func decode(data []byte) (*specs.Experiment, []*specs.ValidationError) {
	var generic any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, []*specs.ValidationError{{Msg: fmt.Sprintf("spec output is not JSON: %v", err)}}
	}
	if _, ok := generic.(map[string]any); !ok {
		return nil, []*specs.ValidationError{{Msg: fmt.Sprintf(
			"a spec must evaluate to an experiment object, got %s", jsonKind(generic))}}
	}
	var errs []*specs.ValidationError
	check(generic, reflect.TypeFor[specs.Experiment](), "", &errs)
	checkStepParams(generic, &errs)
	if len(errs) > 0 {
		return nil, errs
	}
	var e specs.Experiment
	strict := json.NewDecoder(bytes.NewReader(data))
	strict.DisallowUnknownFields()
	if err := strict.Decode(&e); err != nil {
		// check should have found it; report it anyway rather than run a half-decoded experiment.
		return nil, []*specs.ValidationError{{Msg: err.Error()}}
	}
	return &e, nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkStepParams checks each step's params against its activity's params struct (specs.Catalog), as check does
// the rest of the spec: a param the activity does not take and a value of the wrong type are errors at the step's
// param. Steps of an unknown activity are left to specs.Validate, which names the activity.
func checkStepParams(generic any, errs *[]*specs.ValidationError) {
	methods, _ := generic.(map[string]any)["methods"].([]any)
	for i, m := range methods {
		steps, _ := asObject(m)["steps"].([]any)
		for j, s := range steps {
			step := asObject(s)
			activity, _ := step["activity"].(string)
			info, known := specs.Catalog[activity]
			params, isObject := step["params"].(map[string]any)
			if !known || !isObject {
				continue
			}
			id, _ := step["id"].(string)
			path := fmt.Sprintf("methods[%d].steps[%d].params", i, j)
			fields := specs.JSONFields(info.Params)
			for _, k := range slices.Sorted(maps.Keys(params)) {
				if _, ok := fields[k]; !ok {
					takes := "none"
					if len(fields) > 0 {
						takes = strings.Join(slices.Sorted(maps.Keys(fields)), ", ")
					}
					*errs = append(*errs, &specs.ValidationError{Path: join(path, k), Value: k, Key: true,
						Msg: fmt.Sprintf("step %q: activity %s takes no param %q (params: %s)", id, activity, k, takes)})
					continue
				}
				var found []*specs.ValidationError
				check(params[k], fields[k].Type, join(path, k), &found)
				for _, v := range found {
					v.Msg = fmt.Sprintf("step %q: activity %s: %s", id, activity, v.Msg)
					if v.Value == "" {
						// A mistyped number or object has no literal to find: point at the param's name instead.
						v.Value, v.Key = lastKey(v.Path), true
					}
				}
				*errs = append(*errs, found...)
			}
		}
	}
}

func asObject(v any) map[string]any {
	obj, _ := v.(map[string]any)
	return obj
}

// check compares a decoded JSON value with the Go type it will be decoded into.
func check(v any, t reflect.Type, path string, errs *[]*specs.ValidationError) {
	if v == nil {
		return // null leaves the zero value, as encoding/json does
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		leaf(v, t, path, errs)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		check(v, t.Elem(), path, errs)
	case reflect.Interface:
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			typeError(v, "an object", path, errs)
			return
		}
		fields := specs.JSONFields(t)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			f, ok := fields[k]
			if !ok {
				*errs = append(*errs, &specs.ValidationError{Path: join(path, k), Value: k, Key: true,
					Msg: fmt.Sprintf("unknown field %q (fields here: %s)", k, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))})
				continue
			}
			check(obj[k], f.Type, join(path, k), errs)
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			typeError(v, "an array", path, errs)
			return
		}
		for i, x := range arr {
			check(x, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			typeError(v, "an object", path, errs)
			return
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			check(obj[k], t.Elem(), join(path, k), errs)
		}
	default:
		leaf(v, t, path, errs)
	}
}

// leaf decodes one scalar (or a type with its own UnmarshalJSON) on its own and reports why it does not fit.
func leaf(v any, t reflect.Type, path string, errs *[]*specs.ValidationError) {
	b, err := json.Marshal(v)
	if err != nil {
		typeError(v, goKind(t), path, errs)
		return
	}
	if err := json.Unmarshal(b, reflect.New(t).Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			typeError(v, goKind(t), path, errs)
			return
		}
		s, _ := v.(string)
		*errs = append(*errs, &specs.ValidationError{Path: path, Value: s, Msg: err.Error()})
	}
}

func typeError(v any, want, path string, errs *[]*specs.ValidationError) {
	s, _ := v.(string)
	*errs = append(*errs, &specs.ValidationError{Path: path, Value: s,
		Msg: fmt.Sprintf("expected %s, got %s", want, describe(v))})
}

func goKind(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[specs.Duration]():
		return `a duration like "30m" or a number of seconds`
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// describe names a value's JSON kind and, for scalars, the value.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return fmt.Sprintf("string %q", x)
	case json.Number:
		return "number " + x.String()
	case bool:
		return fmt.Sprintf("boolean %t", x)
	}
	return jsonKind(v)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
