package checks

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/runfolder"
	"ctxlab/specs"
)

// Timeout bounds a whole check: each probe has its own, shorter one (Checker.ProbeTimeout).
const Timeout = 3 * time.Minute

// Checker runs the checks over what they read of the machine. The model providers' checks and the embeddings
// client read their endpoints and keys from the environment themselves, as their calls in a sweep do
// (activities/llm's provider declarations); Getenv serves the rest.
type Checker struct {
	// Getenv reads an environment variable: the compression server's address.
	Getenv func(string) string
	// HTTP makes the compression server's request.
	HTTP *http.Client
	// ProbeTimeout bounds one request of a check.
	ProbeTimeout time.Duration
}

// New is a Checker over this process's environment.
func New() Checker {
	return Checker{Getenv: os.Getenv, HTTP: &http.Client{}, ProbeTimeout: 15 * time.Second}
}

// Parts selects what a check covers: the instances' repositories, their graders (when this machine grades) and the
// endpoints.
type Parts struct{ Repos, Graders, Endpoints bool }

// All is every part: what a machine that runs a worker checks.
var All = Parts{Repos: true, Graders: true, Endpoints: true}

// session is one check's run: the checker and the report it adds to.
type session struct {
	Checker
	*Report
}

// Sweep runs the checks of a sweep: its instances' repositories and graders, its models' endpoints and context
// windows, its methods' services. No part selected is a starter that runs no worker: that is a note.
func (c Checker) Sweep(ctx context.Context, e *specs.Experiment, plan *specs.Plan, instances []swebench.Instance,
	runDir string, parts Parts) *Report {
	s := session{c, &Report{}}
	if parts == (Parts{}) {
		s.Note("this starter runs no worker (--no-worker): the repositories, graders, endpoints and services the " +
			"sweep needs are the workers', on their machines and with their environment, and are not checked here; " +
			"run starter check SPEC where a worker runs, with its environment")
		return s.Report
	}
	needs := planNeedsOf(e, plan)
	s.checkInstances(ctx, e.Dataset, needs.gradings, instances, runfolder.Repos(runDir), parts)
	if parts.Endpoints {
		s.checkModels(ctx, e, needs, instances)
		s.checkTokenizers(ctx, e)
		s.checkServices(ctx, needs)
	}
	return s.Report
}

// Graders runs the executor's checks of the instances starter grade grades under g: that this machine can run
// their tests.
func (c Checker) Graders(ctx context.Context, ds specs.Dataset, g specs.Grading, instances []swebench.Instance,
	reposDir string) *Report {
	s := session{c, &Report{}}
	s.checkInstances(ctx, ds, []specs.Grading{g}, instances, reposDir, Parts{Graders: true})
	return s.Report
}

// planNeeds is what a plan's nodes ask of the machine and the endpoints.
type planNeeds struct {
	// gradings are the distinct grading sections of the grade steps.
	gradings []specs.Grading
	// methodsOf lists, per model name, the methods whose steps call it.
	methodsOf map[string][]string
	// embeddings lists the methods per embedding model of dense retrieval; compressors per compressor and endpoint.
	embeddings  map[string][]string
	compressors map[[2]string][]string
	// largest is the largest total cap of an assembled context (tokens of the spec's tokenizer) and the method
	// whose step sets it: a bound on the prompts, for the note on context windows.
	largest       int
	largestMethod string
}

func planNeedsOf(e *specs.Experiment, plan *specs.Plan) planNeeds {
	n := planNeeds{methodsOf: map[string][]string{}, embeddings: map[string][]string{},
		compressors: map[[2]string][]string{}}
	nodes := map[string]specs.Node{}
	for _, nd := range plan.Nodes {
		nodes[nd.Key] = nd
	}
	for _, arm := range plan.Arms {
		for _, st := range arm.Steps {
			n.addStep(nodes[st.Key], arm)
		}
	}
	return n
}

// addStep adds what one node of an arm needs.
func (n *planNeeds) addStep(nd specs.Node, arm specs.Arm) {
	info := specs.Catalog[nd.Activity]
	if info.UsesModel {
		n.methodsOf[arm.Model] = addOnce(n.methodsOf[arm.Model], arm.Method)
	}
	if info.UsesGrading {
		var g struct {
			Grading specs.Grading `json:"grading"`
		}
		if decodeParams(nd.Params, &g) == nil && !slices.ContainsFunc(n.gradings, func(h specs.Grading) bool {
			a, _ := json.Marshal(h)
			b, _ := json.Marshal(g.Grading)
			return string(a) == string(b)
		}) {
			n.gradings = append(n.gradings, g.Grading)
		}
	}
	switch nd.Activity {
	case "retrieve":
		var p specs.RetrieveParams
		if decodeParams(nd.Params, &p) == nil && p.Scorer == specs.ScorerDense {
			n.embeddings[p.EmbeddingModel] = addOnce(n.embeddings[p.EmbeddingModel], arm.Method)
		}
	case "compress":
		var p specs.CompressParams
		if decodeParams(nd.Params, &p) == nil && p.Compressor != specs.CompressorFake && p.Endpoint != "builtin" {
			k := [2]string{string(p.Compressor), p.Endpoint}
			n.compressors[k] = addOnce(n.compressors[k], arm.Method)
		}
	case "assemble":
		var p specs.AssembleParams
		if decodeParams(nd.Params, &p) == nil && p.TotalCap > n.largest {
			n.largest, n.largestMethod = p.TotalCap, arm.Method
		}
	}
}

func addOnce(list []string, m string) []string {
	if !slices.Contains(list, m) {
		list = append(list, m)
	}
	return list
}

func decodeParams(params map[string]any, v any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
