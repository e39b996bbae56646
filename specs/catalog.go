package specs

import (
	"fmt"
	"reflect"
	"sort"
)

// ActivityInfo describes an activity a step may name: the catalog entry a Kind declares (Kind.Info).
type ActivityInfo struct {
	Name string
	// Queue is the task queue kind the activity runs on.
	Queue string
	// Cheap activities take well under a second even on a large repository and need nothing a queue's workers
	// have that the workflow worker lacks: the Issue workflow runs them in process (see RunsLocally).
	Cheap bool
	// NoEndpoint, when set, reports whether a step with these params calls no endpoint (the offline model, the
	// fake compressor): such a step is as cheap as a Cheap one, and runs in process too.
	NoEndpoint func(params map[string]any) bool
	// Inputs are the input names the activity requires; Optional ones may be left out.
	Inputs   []string
	Optional []string
	// UsesModel activities get the model they run under as the "model" parameter, so that the same step under two
	// models is two nodes, and the same step under one model in two methods is one.
	UsesModel bool
	// UsesTokenizer activities get the experiment's tokenizer as the "tokenizer" parameter.
	UsesTokenizer bool
	// UsesGrading activities get the experiment's grading settings as the "grading" parameter.
	UsesGrading bool
	// Summary is one line for `starter compile` and error messages.
	Summary string
	// Params is the struct type the activity decodes a step's params into (Kind's P). The spec compiler decodes
	// every step's params into it strictly, so an unknown or mistyped param is a spec error, not a silent default.
	Params reflect.Type
	// Defaults is the Params value the activity starts from before decoding a step's params.
	Defaults any
	// Fields are the results row fields the activity owns: its node output's row fragment may set these and no
	// others: the activity fails, naming the instance, step and field, on any other (specs.CheckRow).
	Fields []RowField
	// ReplacesContext marks an activity whose context replaces the contexts its method's earlier steps built
	// (retrieve, compress, corrupt): before its fragment is merged into a row, every field marked Context in the
	// catalog is reset to null, so the row never describes a context the method did not patch from.
	ReplacesContext bool
	// Task is the model task the activity asks, if any.
	Task string
	// CodeVersion is the version of what the activity computes, in its node memo keys (Kind.CodeVersion).
	CodeVersion string
}

// Catalog lists every activity a spec may use, by name: what the kinds' declarations (Declare) registered.
var Catalog = map[string]ActivityInfo{}

func register(a ActivityInfo) {
	if a.Params == nil || a.Params.Kind() != reflect.Struct {
		panic("specs: activity " + a.Name + " needs a params struct type")
	}
	if a.Defaults != nil && reflect.TypeOf(a.Defaults) != a.Params {
		panic("specs: activity " + a.Name + " has defaults of another type than its params")
	}
	if _, dup := Catalog[a.Name]; dup {
		panic("specs: activity " + a.Name + " registered twice")
	}
	if err := checkValueTags(a.Params); err != nil {
		panic("specs: activity " + a.Name + ": " + err.Error())
	}
	defaults := reflect.Zero(a.Params)
	if a.Defaults != nil {
		defaults = reflect.ValueOf(a.Defaults)
	}
	if problems := checkValues(a.Name, defaults, false); len(problems) > 0 {
		panic("specs: the defaults of " + a.Name + " break their declarations: " + problems[0].Msg)
	}
	if err := checkQueue(a); err != nil {
		panic("specs: " + err.Error())
	}
	if err := checkFields(a, Catalog); err != nil {
		panic("specs: " + err.Error())
	}
	Catalog[a.Name] = a
}

// ActivityNames lists the catalog's names in order, for error messages.
func ActivityNames() []string {
	names := make([]string, 0, len(Catalog))
	for n := range Catalog {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DefaultParams returns every activity's default params in their JSON form (fields without a default are zero, and
// omitempty ones are left out), by activity name: what jsonnet/lib reads instead of keeping a copy.
func DefaultParams() (map[string]any, error) {
	out := map[string]any{}
	for name, info := range Catalog {
		v := info.Defaults
		if v == nil {
			v = reflect.New(info.Params).Elem().Interface()
		}
		p, err := toParam(v)
		if err != nil {
			return nil, fmt.Errorf("default params of %s: %w", name, err)
		}
		out[name] = p
	}
	return out, nil
}
