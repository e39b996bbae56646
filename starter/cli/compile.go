package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"ctxlab/specs"
)

type compileOptions struct {
	spec string
	specFlags
}

func parseCompile(args []string, stderr io.Writer) (compileOptions, error) {
	var o compileOptions
	fs := flag.NewFlagSet("compile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: starter compile SPEC [--ext-str K=V] [--tla-str K=V]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return o, err
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
