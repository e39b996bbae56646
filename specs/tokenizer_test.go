package specs

import (
	"strings"
	"testing"
)

func TestResolveTokenizer(t *testing.T) {
	gpt4 := Model{Name: "g4", Provider: "openai", ID: "gpt-4-0613"}
	gpt4o := Model{Name: "g4o", Provider: "openai", ID: "gpt-4o-mini"}
	routed := Model{Name: "r", Provider: "openai", ID: "openai/gpt-3.5-turbo"}
	llama := Model{Name: "l", Provider: "openai", ID: "stories260K", Tokenizer: TokenizerEndpoint}
	other := Model{Name: "o", Provider: "openai", ID: "claude-sonnet-4"}
	offline := Model{Name: "offline", Provider: "offline"}
	for _, c := range []struct {
		exp  string
		m    Model
		want string
	}{
		{TokenizerModel, gpt4, "cl100k_base"},
		{TokenizerModel, gpt4o, "o200k_base"},
		{TokenizerModel, routed, "cl100k_base"},
		{TokenizerModel, llama, "endpoint:stories260K"},
		{TokenizerModel, other, "o200k_base"},
		{TokenizerModel, offline, "o200k_base"},
		{"", gpt4, "cl100k_base"},
		// A pinned tokenizer wins over the model's own: the single-tokenizer caveat.
		{"o200k_base", gpt4, "o200k_base"},
		{"o200k_base", llama, "o200k_base"},
		{"cl100k_base", gpt4o, "cl100k_base"},
		{TokenizerEndpoint, gpt4o, "endpoint:gpt-4o-mini"},
	} {
		e := &Experiment{Tokenizer: c.exp}
		if got := ResolveTokenizer(e, c.m); got != c.want {
			t.Errorf("experiment %q, model %s (%s): %q, want %q", c.exp, c.m.Name, c.m.ID, got, c.want)
		}
	}
}

// TestPlanTokenizerPerModel: each model's arms get its own tokenizer, so two models with different tokenizers run
// their counting steps as different nodes (whose memo keys differ), and models of one tokenizer share them.
func TestPlanTokenizerPerModel(t *testing.T) {
	e := &Experiment{Name: "t", Tokenizer: TokenizerModel,
		Models: []Model{
			{Name: "a", Provider: "openai", ID: "gpt-4"},
			{Name: "b", Provider: "openai", ID: "stories", Tokenizer: TokenizerEndpoint},
			{Name: "c", Provider: "openai", ID: "gpt-4-turbo"},
		},
		Methods: []Method{{Name: "m", Steps: []Step{
			{ID: "checkout", Activity: "checkout"},
			{ID: "context", Activity: "no_source", Inputs: map[string]string{"checkout": "checkout"}},
		}}}}
	p, err := BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range p.Nodes {
		if n.Activity == "no_source" {
			got = append(got, n.Params["tokenizer"].(string)+"="+strings.Join(n.Steps, ","))
		}
	}
	want := "cl100k_base=a/m.context,c/m.context endpoint:stories=b/m.context"
	if strings.Join(got, " ") != want {
		t.Errorf("no_source nodes %q, want %q", strings.Join(got, " "), want)
	}
}

func TestValidateModelTokenizer(t *testing.T) {
	for _, c := range []struct {
		name      string
		edit      func(e *Experiment)
		path, msg string
	}{
		{"unknown", func(e *Experiment) { e.Models[0].Tokenizer = "gpt2" }, "models[0].tokenizer",
			`unknown tokenizer "gpt2"`},
		{"endpoint offline", func(e *Experiment) {
			e.Tokenizer = TokenizerModel
			e.Models[0] = Model{Name: "offline", Provider: "offline", Tokenizer: TokenizerEndpoint}
		}, "models[0].tokenizer", "needs a server that tokenizes"},
		{"pinned endpoint offline", func(e *Experiment) {
			e.Tokenizer = TokenizerEndpoint
			e.Models[0] = Model{Name: "offline", Provider: "offline"}
		}, "models[0].tokenizer", "needs a server that tokenizes"},
	} {
		e := goodExperiment()
		c.edit(e)
		errs := Validate(e)
		found := false
		for _, err := range errs {
			found = found || err.Path == c.path && strings.Contains(err.Error(), c.msg)
		}
		if !found {
			t.Errorf("%s: %v, want %s: %s", c.name, errs, c.path, c.msg)
		}
	}
	e := goodExperiment()
	e.Tokenizer = TokenizerModel
	e.Models[0] = Model{Name: "l", Provider: "openai", ID: "stories", Tokenizer: TokenizerEndpoint}
	if errs := Validate(e); errs != nil {
		t.Errorf("an endpoint model under tokenizer 'model': %v", errs)
	}
}

// TestAnthropicTokenizer: 'endpoint' for an anthropic model is Anthropic's count_tokens ("anthropic:" + the id),
// whether the model names it or the experiment pins it, and validates.
func TestAnthropicTokenizer(t *testing.T) {
	m := Model{Name: "c", Provider: "anthropic", ID: "claude-sonnet-4-5", Tokenizer: TokenizerEndpoint}
	if got := ResolveTokenizer(&Experiment{Tokenizer: TokenizerModel}, m); got != "anthropic:claude-sonnet-4-5" {
		t.Errorf("model's own: %q", got)
	}
	m.Tokenizer = ""
	if got := ResolveTokenizer(&Experiment{Tokenizer: TokenizerEndpoint}, m); got != "anthropic:claude-sonnet-4-5" {
		t.Errorf("pinned: %q", got)
	}
	if got := ResolveTokenizer(&Experiment{Tokenizer: TokenizerModel}, m); got != FallbackTokenizer {
		t.Errorf("none named: %q", got)
	}
	e := goodExperiment()
	e.Tokenizer = TokenizerEndpoint
	e.Models[0] = m
	if errs := Validate(e); errs != nil {
		t.Errorf("validate: %v", errs)
	}
}
