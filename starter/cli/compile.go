package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"ctxlab/jsonnet"
	"ctxlab/specs"
)

// specFlags are the flags every command that reads a spec takes: the jsonnet tool's variables, top-level arguments
// and library folders, with its names.
type specFlags struct {
	ext, extStrFile, extCode kvFlag
	tla, tlaCode             kvFlag
	// jpath are the -J folders in command-line order (the right-most is searched first, then $JSONNET_PATH).
	jpath repeatedFlag
}

func (s *specFlags) register(fs *flag.FlagSet) {
	s.ext, s.extStrFile, s.extCode, s.tla, s.tlaCode = kvFlag{}, kvFlag{}, kvFlag{}, kvFlag{}, kvFlag{}
	fs.Var(s.ext, "ext-str", "Jsonnet external variable `K=V` (repeatable), as the jsonnet tool's --ext-str")
	fs.Var(s.extStrFile, "ext-str-file", "Jsonnet external variable `K=FILE` whose string is the file's text "+
		"(repeatable)")
	fs.Var(s.extCode, "ext-code", "Jsonnet external variable `K=CODE` whose value is the Jsonnet code's (repeatable)")
	fs.Var(s.tla, "tla-str", "Jsonnet top-level argument `K=V` (repeatable), as the jsonnet tool's --tla-str")
	fs.Var(s.tlaCode, "tla-code", "Jsonnet top-level argument `K=CODE` whose value is the Jsonnet code's (repeatable)")
	for _, name := range []string{"J", "jpath"} {
		fs.Var(&s.jpath, name, "library `DIR` searched for imports not found beside the importing file (repeatable: "+
			"the right-most first, then $JSONNET_PATH)")
	}
}

// jsonnetOptions are the compiler options the flags and $JSONNET_PATH say.
func (s specFlags) jsonnetOptions() jsonnet.Options {
	return jsonnet.Options{
		JPath:      jsonnet.SearchPath(s.jpath, os.Getenv("JSONNET_PATH")),
		ExtStr:     s.ext,
		ExtStrFile: s.extStrFile,
		ExtCode:    s.extCode,
		TLAStr:     s.tla,
		TLACode:    s.tlaCode,
	}
}

// compileSpec evaluates and validates a spec.
func compileSpec(path string, sf specFlags) (*specs.Experiment, error) {
	return jsonnet.Compile(path, sf.jsonnetOptions())
}

// repeatedFlag collects every value of a repeated flag, in order.
type repeatedFlag []string

func (r *repeatedFlag) String() string { return fmt.Sprint([]string(*r)) }
func (r *repeatedFlag) Set(s string) error {
	*r = append(*r, s)
	return nil
}

type compileOptions struct {
	spec string
	// lib prints the embedded library instead of compiling a spec.
	lib bool
	specFlags
}

func parseCompile(args []string, stderr io.Writer) (compileOptions, error) {
	var o compileOptions
	fs := flag.NewFlagSet("compile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.register(fs)
	fs.BoolVar(&o.lib, "lib", false, "print the embedded "+jsonnet.LibraryName+" (every helper, documented) "+
		"instead of compiling a spec")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: starter compile SPEC [-J DIR] [--ext-str K=V] [--ext-str-file K=FILE] "+
			"[--ext-code K=CODE] [--tla-str K=V] [--tla-code K=CODE]\n       starter compile --lib")
		printFlags(fs)
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return o, err
	}
	if o.lib {
		if len(pos) > 0 {
			return o, fmt.Errorf("compile --lib takes no spec, got %d arguments", len(pos))
		}
		return o, nil
	}
	o.spec, err = oneSpec("compile", pos)
	return o, err
}

// compiledStep is a method's step as compile prints it: the step, and the node it resolved to.
type compiledStep struct {
	specs.Step
	Node string `json:"node"`
}

type compiledMethod struct {
	Method string         `json:"method"`
	Model  string         `json:"model"`
	Steps  []compiledStep `json:"steps"`
}

type compiled struct {
	Experiment *specs.Experiment `json:"experiment"`
	Methods    []compiledMethod  `json:"methods"`
	Nodes      []specs.Node      `json:"nodes"`
}

func compile(o compileOptions, stdout, stderr io.Writer) int {
	if o.lib {
		fmt.Fprint(stdout, jsonnet.Library())
		return exitOK
	}
	e, err := compileSpec(o.spec, o.specFlags)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", o.spec, err)
		return exitUsage
	}
	out := compiled{Experiment: e, Nodes: plan.Nodes}
	for _, arm := range plan.Arms {
		cm := compiledMethod{Method: arm.Method, Model: arm.Model}
		byID := map[string]specs.Step{}
		for _, m := range e.Methods {
			if m.Name == arm.Method {
				for _, s := range m.Steps {
					byID[s.ID] = s
				}
			}
		}
		for _, s := range arm.Steps {
			cm.Steps = append(cm.Steps, compiledStep{Step: byID[s.ID], Node: s.Key})
		}
		out.Methods = append(out.Methods, cm)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(stderr, err)
		return exitFail
	}
	return exitOK
}
