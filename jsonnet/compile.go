package jsonnet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	gojsonnet "github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"

	"ctxlab/specs"
)

// ExtVarAll is the external variable Compile always defines: an object of every ext-str (as strings) and ext-code
// (as values) variable, which ctxlab.ext reads so that a spec can give a default for a variable that was not set.
const ExtVarAll = "ctxlab_ext"

// Options are the variables and library folders a spec is evaluated with, like the jsonnet tool's flags.
type Options struct {
	// JPath are library folders, in search order (SearchPath makes it from -J flags and JSONNET_PATH): an import
	// not found beside the importing file is looked up in each in turn.
	JPath []string
	// ExtStr are --ext-str variables: std.extVar(name) is the string, and ctxlab.ext(name, default) reads them.
	ExtStr map[string]string
	// ExtStrFile are --ext-str-file variables: std.extVar(name) is the text of the file (a path relative to the
	// working directory), as if given with --ext-str.
	ExtStrFile map[string]string
	// ExtCode are --ext-code variables: Jsonnet code whose value std.extVar(name) is.
	ExtCode map[string]string
	// TLAStr and TLACode are --tla-str and --tla-code: arguments of a spec that is a function.
	TLAStr  map[string]string
	TLACode map[string]string
	// Timeout and MaxMemory bound the evaluation (DefaultTimeout, DefaultMaxMemory when 0; limits.go).
	Timeout   time.Duration
	MaxMemory int64
}

// Compile evaluates the spec file at path and returns the experiment it declares, decoded strictly, with defaults
// filled, validated, and with a dataset file resolved to an absolute path relative to the spec's folder. Errors are a
// *Error (one line, file:line:col: message) or, when validation finds several problems, Errors (one per line).
func Compile(path string, opts Options) (*specs.Experiment, error) {
	vm, err := newVM(opts)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	node, _, err := vm.ImportAST("", path)
	if err != nil {
		var se staticError
		if errors.As(err, &se) {
			return nil, fromJsonnet(err, path)
		}
		return nil, &Error{File: path, Msg: oneLine(strings.Replace(err.Error(), "couldn't open import", "couldn't open", 1))}
	}
	out, err := evaluate(vm, node, path, opts)
	if err != nil {
		return nil, err
	}
	e, verrs := decode([]byte(out))
	if len(verrs) == 0 {
		e.SetDefaults()
		verrs = specs.Validate(e)
	}
	if len(verrs) > 0 {
		ix := indexSources(vm, path)
		errs := make(Errors, len(verrs))
		for i, v := range verrs {
			errs[i] = ix.locate(v)
		}
		if len(errs) == 1 {
			return nil, errs[0]
		}
		return nil, errs
	}
	e.File = path
	if e.Dataset.Generate == "" && !filepath.IsAbs(e.Dataset.File) {
		abs, err := filepath.Abs(filepath.Join(filepath.Dir(path), e.Dataset.File))
		if err != nil {
			return nil, &Error{File: path, Msg: fmt.Sprintf("dataset file %s: %v", e.Dataset.File, err)}
		}
		e.Dataset.File = abs
	}
	return e, nil
}

// newVM makes a VM with ctxlab's importer and the options' variables.
func newVM(opts Options) (*gojsonnet.VM, error) {
	vm := gojsonnet.MakeVM()
	vm.Importer(newImporter(opts.JPath...))
	vm.NativeFunction(defaultsFunction)
	vm.NativeFunction(experimentDefaultsFunction)
	extStr, err := extStrings(opts)
	if err != nil {
		return nil, err
	}
	all := map[string]string{}
	for name, v := range extStr {
		vm.ExtVar(name, v)
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("ext-str %s: %w", name, err)
		}
		all[name] = string(b)
	}
	for name, code := range opts.ExtCode {
		if _, dup := extStr[name]; dup {
			return nil, fmt.Errorf("external variable %s is given both as ext-str and ext-code", name)
		}
		vm.ExtCode(name, code)
		// Referring to the variable keeps its code's own error locations and evaluates it only when used.
		b, _ := json.Marshal(name)
		all[name] = "std.extVar(" + string(b) + ")"
	}
	if _, taken := all[ExtVarAll]; taken {
		return nil, fmt.Errorf("external variable %s is reserved by ctxlab", ExtVarAll)
	}
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("{")
	for _, name := range names {
		k, _ := json.Marshal(name)
		fmt.Fprintf(&b, "%s: %s,", k, all[name])
	}
	b.WriteString("}")
	vm.ExtCode(ExtVarAll, b.String())
	for name, v := range opts.TLAStr {
		vm.TLAVar(name, v)
	}
	for name, code := range opts.TLACode {
		if _, dup := opts.TLAStr[name]; dup {
			return nil, fmt.Errorf("top-level argument %s is given both as tla-str and tla-code", name)
		}
		vm.TLACode(name, code)
	}
	return vm, nil
}

// defaultsFunction is std.native('ctxlab_defaults')(): every activity's default params by name, from the catalog,
// which ctxlab.param_defaults reads so that the library keeps no copy of them.
var defaultsFunction = &gojsonnet.NativeFunction{
	Name:   "ctxlab_defaults",
	Params: ast.Identifiers{},
	Func:   func([]any) (any, error) { return specs.DefaultParams() },
}

// experimentDefaultsFunction is std.native('ctxlab_experiment_defaults')(): the experiment defaults SetDefaults
// fills (specs.ExperimentDefaults), which ctxlab.experiment merges a spec onto, so the library keeps no copy.
var experimentDefaultsFunction = &gojsonnet.NativeFunction{
	Name:   "ctxlab_experiment_defaults",
	Params: ast.Identifiers{},
	Func:   func([]any) (any, error) { return specs.DefaultsJSON() },
}

// extStrings merges ext-str variables with the text of ext-str-file ones; a name given both ways is an error.
func extStrings(opts Options) (map[string]string, error) {
	if len(opts.ExtStrFile) == 0 {
		return opts.ExtStr, nil
	}
	all := make(map[string]string, len(opts.ExtStr)+len(opts.ExtStrFile))
	for name, v := range opts.ExtStr {
		all[name] = v
	}
	for name, file := range opts.ExtStrFile {
		if _, dup := opts.ExtStr[name]; dup {
			return nil, fmt.Errorf("external variable %s is given both as ext-str and ext-str-file", name)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("ext-str-file %s: %w", name, err)
		}
		all[name] = string(b)
	}
	return all, nil
}

// evalError places an evaluation error. A file imported by the spec that does not parse is reported by go-jsonnet at
// the import; ctxlab reports it at the syntax error in the imported file instead.
func evalError(vm *gojsonnet.VM, path string, err error) error {
	var rt gojsonnet.RuntimeError
	if errors.As(err, &rt) {
		for _, se := range indexSources(vm, path).broken {
			if strings.Contains(rt.Msg, se.Error()) {
				return fromLocation(se.Loc(), staticMessage(se))
			}
		}
	}
	return fromJsonnet(err, path)
}
