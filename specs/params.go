package specs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/agnivade/levenshtein"
)

// A params field declares the values it may hold, beside its JSON name, so that the spec compiler (CheckParams) and
// the step (Kind.Decode) check them against one declaration:
//
//   - a field of an Enum type holds one of its Values. Empty is allowed where the field is omitempty (the step's
//     default); a field without omitempty must be set, by the step or by its kind's Defaults.
//   - a number field's range tag bounds it: `range:"[0,1]"`, `range:"(0,1]"`, `range:"[1,)"` (an empty end is
//     unbounded). Zero, where it means "the default", must be inside the range.
//   - a string field's check tag names a check of ValueChecks: `check:"tokenizer_name"`.

// Enum is a params field type with a closed set of values: Values lists them in the order messages name them.
type Enum interface{ Values() []string }

// names lists enum constants as the strings Enum.Values returns.
func names[T ~string](values ...T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// ValueChecks are the checks a params field may name in its check tag, by name: each returns the values it would
// have accepted (for the message) and whether v is one of them.
var ValueChecks = map[string]func(v string) (allowed []string, ok bool){
	"tokenizer_name": checkStepTokenizer,
}

// checkStepTokenizer accepts what the plan gives a counting step (ResolveTokenizer): an encoding compiled into ctxlab,
// or a server's own tokenizer, "endpoint:MODEL" or "anthropic:MODEL".
func checkStepTokenizer(v string) ([]string, bool) {
	allowed := append(slices.Clone(Encodings), TokenizerEndpoint+":MODEL", TokenizerAnthropic+":MODEL")
	if slices.Contains(Encodings, v) {
		return allowed, true
	}
	for _, scheme := range []string{TokenizerEndpoint, TokenizerAnthropic} {
		if id, ok := strings.CutPrefix(v, scheme+":"); ok && id != "" {
			return allowed, true
		}
	}
	return allowed, false
}

// valueRange is a parsed range tag.
type valueRange struct {
	lo, hi         float64
	loOpen, hiOpen bool // the end itself is excluded
	text           string
}

// parseRange parses a range tag: "[lo,hi]", "(lo,hi)" or a mix, either end empty for no bound.
func parseRange(tag string) (valueRange, error) {
	r := valueRange{lo: math.Inf(-1), hi: math.Inf(1), text: tag}
	inner, ok := strings.CutPrefix(tag, "[")
	if !ok {
		if inner, ok = strings.CutPrefix(tag, "("); !ok {
			return r, fmt.Errorf("range %q must start with [ or (", tag)
		}
		r.loOpen = true
	}
	if s, ok := strings.CutSuffix(inner, "]"); ok {
		inner = s
	} else if s, ok := strings.CutSuffix(inner, ")"); ok {
		inner, r.hiOpen = s, true
	} else {
		return r, fmt.Errorf("range %q must end with ] or )", tag)
	}
	lo, hi, ok := strings.Cut(inner, ",")
	if !ok {
		return r, fmt.Errorf("range %q needs a comma between its ends", tag)
	}
	var err error
	if lo = strings.TrimSpace(lo); lo != "" {
		if r.lo, err = strconv.ParseFloat(lo, 64); err != nil {
			return r, fmt.Errorf("range %q: %v", tag, err)
		}
	}
	if hi = strings.TrimSpace(hi); hi != "" {
		if r.hi, err = strconv.ParseFloat(hi, 64); err != nil {
			return r, fmt.Errorf("range %q: %v", tag, err)
		}
	}
	if r.lo > r.hi {
		return r, fmt.Errorf("range %q is empty", tag)
	}
	return r, nil
}

func (r valueRange) contains(x float64) bool {
	return !math.IsNaN(x) && (x > r.lo || !r.loOpen && x == r.lo) && (x < r.hi || !r.hiOpen && x == r.hi)
}

// String is the range as messages print it: "[0, 1]", "[1, ∞)".
func (r valueRange) String() string {
	lo, hi := "-∞", "∞"
	if !math.IsInf(r.lo, -1) {
		lo = strconv.FormatFloat(r.lo, 'g', -1, 64)
	}
	if !math.IsInf(r.hi, 1) {
		hi = strconv.FormatFloat(r.hi, 'g', -1, 64)
	}
	open, closed := "[", "]"
	if r.loOpen || math.IsInf(r.lo, -1) {
		open = "("
	}
	if r.hiOpen || math.IsInf(r.hi, 1) {
		closed = ")"
	}
	return open + lo + ", " + hi + closed
}

var enumType = reflect.TypeFor[Enum]()

// checkValueTags refuses a params struct whose value declarations are malformed: a range on a field that is not a
// number, a range that does not parse, a check that does not exist or is not on a string.
func checkValueTags(t reflect.Type) error {
	for name, f := range JSONFields(t) {
		if tag, ok := f.Tag.Lookup("range"); ok {
			if t := f.Type; !isNumber(t.Kind()) && (t.Kind() != reflect.Pointer || !isNumber(t.Elem().Kind())) {
				return fmt.Errorf("param %q has a range but is a %s", name, f.Type)
			}
			if _, err := parseRange(tag); err != nil {
				return fmt.Errorf("param %q: %v", name, err)
			}
		}
		if check, ok := f.Tag.Lookup("check"); ok {
			if _, known := ValueChecks[check]; !known || f.Type.Kind() != reflect.String {
				return fmt.Errorf("param %q: check %q is none of ValueChecks, or the param is no string", name, check)
			}
		}
		if f.Type.Implements(enumType) && f.Type.Kind() != reflect.String {
			return fmt.Errorf("param %q: enum type %s is not a string type", name, f.Type)
		}
	}
	return nil
}

func isNumber(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// checkValues checks a decoded params struct against its fields' value declarations, in param order; required says
// an Enum field without omitempty must be set (not of a kind's defaults, which a step completes). A problem's Value
// is the offending literal as a spec writes it (a string, or a number in Go's shortest form, Number set), so that the
// compiler can point at it.
func checkValues(activity string, params reflect.Value, required bool) []ParamProblem {
	fields := JSONFields(params.Type())
	var problems []ParamProblem
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range fields {
			if !yield(n) {
				return
			}
		}
	}) {
		f := fields[name]
		v := params.FieldByName(f.Name)
		if p, bad := checkValue(f, name, v, required); bad {
			p.Msg = fmt.Sprintf("activity %s: param %q%s", activity, name, p.Msg)
			problems = append(problems, p)
		}
	}
	return problems
}

// checkValue checks one field's value; Msg is what follows the param's name.
func checkValue(f reflect.StructField, name string, v reflect.Value, required bool) (ParamProblem, bool) {
	p := ParamProblem{Param: name}
	if v.Kind() == reflect.Pointer { // set or not: unset is the default
		if v.IsNil() {
			return p, false
		}
		v = v.Elem()
	}
	if tag, ok := f.Tag.Lookup("range"); ok {
		r, _ := parseRange(tag)
		x := toFloat(v)
		if !r.contains(x) {
			p.Value, p.Number = strconv.FormatFloat(x, 'g', -1, 64), true
			p.Msg = fmt.Sprintf(": %s is out of range %s", p.Value, r)
			return p, true
		}
	}
	var allowed []string
	var ok bool
	switch {
	case f.Type.Implements(enumType):
		allowed = v.Interface().(Enum).Values()
		ok = slices.Contains(allowed, v.String())
		if v.String() == "" {
			_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if required && !slices.Contains(strings.Split(opts, ","), "omitempty") {
				p.Msg, p.Required = fmt.Sprintf(" is required (one of %s)", list(allowed)), true
				return p, true
			}
			ok = true
		}
	case f.Tag.Get("check") != "":
		if v.String() == "" { // filled in by the plan
			return p, false
		}
		allowed, ok = ValueChecks[f.Tag.Get("check")](v.String())
	default:
		return p, false
	}
	if ok {
		return p, false
	}
	p.Value = v.String()
	p.Msg = fmt.Sprintf(": %q is not one of %s", p.Value, list(allowed))
	if near := Nearest(p.Value, allowed); near != "" {
		p.Msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return p, true
}

func toFloat(v reflect.Value) float64 {
	switch {
	case v.CanInt():
		return float64(v.Int())
	case v.CanUint():
		return float64(v.Uint())
	case v.CanFloat():
		return v.Float()
	}
	return math.NaN()
}

// Nearest is the allowed value closest to v by edit distance (a misspelling's likely meaning) when one is within a
// third of v's length (at least 2 edits), else the first that v begins: "bm52" is "bm25", "o200k" is "o200k_base",
// "paragraph" is nothing.
func Nearest(v string, allowed []string) string {
	v = strings.ToLower(v)
	best, bestDist := "", max(2, len(v)/3)+1
	for _, a := range allowed {
		if d := levenshtein.ComputeDistance(v, strings.ToLower(a)); d < bestDist {
			best, bestDist = a, d
		}
	}
	if best == "" && len(v) >= 2 {
		for _, a := range allowed {
			if strings.HasPrefix(strings.ToLower(a), v) {
				return a
			}
		}
	}
	return best
}

// decodeParams decodes params into a new value of type t starting from defaults (when not nil), strictly, as a
// kind decodes a step's params.
func decodeParams(t reflect.Type, defaults any, params map[string]any) (reflect.Value, error) {
	p := reflect.New(t)
	if defaults != nil {
		p.Elem().Set(reflect.ValueOf(defaults))
	}
	b, err := json.Marshal(params)
	if err != nil {
		return p.Elem(), err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p.Interface()); err != nil {
		return p.Elem(), err
	}
	return p.Elem(), nil
}
