package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"ctxlab/activities/rankings"
	"ctxlab/jsonnet"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
)

// compileSpec evaluates and validates a spec.
func compileSpec(path string, sf jsonnet.Flags) (*specs.Experiment, error) {
	return jsonnet.Compile(path, sf.Options())
}

var compileCommand = commandDef[compileOptions, *compileOptions]{
	use:   "compile SPEC",
	short: "print the compiled DAG of every method as JSON",
	long: "Prints every method's compiled DAG, with the node each step resolved to; steps that share a node run " +
		"once per issue, and each BM25 ranking with the retrieve steps that read it, computed once per issue.\n" +
		"`starter compile --lib` prints the embedded " + jsonnet.LibraryName + " instead.",
	run: compile,
}

func init() { commands = append(commands, compileCommand.command()) }

type compileOptions struct {
	spec string
	// lib prints the embedded library instead of compiling a spec.
	lib bool
	jsonnet.Flags
}

func (o *compileOptions) define(fs *pflag.FlagSet) {
	o.Flags.Register(fs)
	fs.BoolVar(&o.lib, "lib", false, "print the embedded "+jsonnet.LibraryName+" (every helper, documented) "+
		"instead of compiling a spec")
}

func (o *compileOptions) complete(pos []string, _ *pflag.FlagSet) error {
	if o.lib {
		if len(pos) > 0 {
			return fmt.Errorf("compile --lib takes no spec, got %d arguments", len(pos))
		}
		return nil
	}
	var err error
	o.spec, err = oneSpec("compile", pos)
	return err
}

func parseCompile(args []string, stderr io.Writer) (compileOptions, error) {
	return compileCommand.parse(args, stderr)
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
	Rankings   []sharedRanking   `json:"rankings"`
}

// sharedRanking is one BM25 ranking of an issue's snapshot against its text, as the retrieve steps that read it
// ask for it (activities/rankings): it is computed once per issue, by whichever of them comes first, and read by the
// others, whatever their method, model or budget.
type sharedRanking struct {
	// Checkout is the node whose snapshot is ranked.
	Checkout string `json:"checkout"`
	rankings.Ranker
	// Steps are the "model/method.step" of every retrieve step that reads it; Nodes are their nodes.
	Steps []string `json:"steps"`
	Nodes []string `json:"nodes"`
}

// sharedRankings groups the plan's BM25 retrieve nodes by the ranking they read, in plan order. Dense retrieval
// is not among them: its embeddings are shared by their own cache.
func sharedRankings(plan *specs.Plan) []sharedRanking {
	var out []sharedRanking
	type key struct {
		checkout string
		ranker   rankings.Ranker
	}
	index := map[key]int{}
	for _, n := range plan.Nodes {
		if n.Activity != specs.Retrieve.Name {
			continue
		}
		p, err := specs.Retrieve.Decode(n.Params)
		if err != nil || p.Scorer == specs.ScorerDense {
			continue
		}
		r, err := rankings.RankerOf(p)
		if err != nil {
			continue // Validate refuses such params before a plan is built
		}
		k := key{n.Inputs["checkout"], r}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, sharedRanking{Checkout: k.checkout, Ranker: r})
		}
		out[i].Steps = append(out[i].Steps, n.Steps...)
		out[i].Nodes = append(out[i].Nodes, n.Key)
	}
	return out
}

func compile(o compileOptions, stdout, stderr io.Writer) int {
	if o.lib {
		fmt.Fprint(stdout, jsonnet.Library())
		return exitcode.OK
	}
	e, err := compileSpec(o.spec, o.Flags)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitcode.Usage
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", o.spec, err)
		return exitcode.Usage
	}
	out := compiled{Experiment: e, Nodes: plan.Nodes, Rankings: sharedRankings(plan)}
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
		return exitcode.Fail
	}
	return exitcode.OK
}
