package steps

import (
	"context"
	"errors"
	"fmt"

	"ctxlab/activities/agent"
	"ctxlab/activities/api"
	"ctxlab/activities/llm"
	"ctxlab/activities/repo"
	"ctxlab/internal/offlinetask"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// AgentTrajectory is an agent's conversation and what it saw, as the content store keeps it after each turn.
type AgentTrajectory struct {
	Messages []llm.Message `json:"messages"`
	Turns    []AgentTurn   `json:"turns"`
	// Seen are the repository lines shown, as runs per path.
	Seen map[string][][2]int `json:"seen,omitempty"`
	// Budget is the bound on tool output tokens (0: none), ToolTokens what was shown of it.
	Budget     int              `json:"budget"`
	ToolTokens int              `json:"tool_tokens"`
	EditFormat specs.EditFormat `json:"edit_format"`
	Done       bool             `json:"done"`
	// Stop says why the trajectory ended: answered, or max_turns (a tool call on the last turn).
	Stop  string `json:"stop,omitempty"`
	Final string `json:"final,omitempty"`
}

// AgentTurn is one model call and the tool call it asked for.
type AgentTurn struct {
	N       int     `json:"n"`
	Request cas.Ref `json:"request"` // the messages sent
	Answer  cas.Ref `json:"answer"`  // the answer's text
	// Call is the tool call the answer asked for; CallError why it could not be read.
	Call      *offlinetask.AgentCall `json:"call,omitempty"`
	CallError string                 `json:"call_error,omitempty"`
	// Result is the tool's output as the agent saw it, ResultTokens its tokens; Refused marks a path outside.
	Result       string `json:"result,omitempty"`
	ResultTokens int    `json:"result_tokens,omitempty"`
	ResultCut    bool   `json:"result_cut,omitempty"`
	Refused      bool   `json:"refused,omitempty"`
	// The model call's usage.
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	// Usage split by price (the row's cached_tokens, cache_write_tokens and cost_*_usd); unset for the offline
	// stand-in.
	Split map[string]float64 `json:"split,omitempty"`
	// ModelServed is the model the endpoint named, when not the spec's (the row's model_served).
	ModelServed string `json:"model_served,omitempty"`
}

func init() {
	registerStep(specs.Agent, agentStep)
	registerStep(specs.AgentContext, agentContextStep)
	registerStep(specs.AgentPatch, agentPatchStep)
}

// AgentTurns runs an agent's turns, each as a node of its own with its memo and attempt log, as package activities'
// turn activities do: agentStep runs a trajectory through them.
type AgentTurns interface {
	AgentModelTurn(ctx context.Context, in api.AgentTurnInput) (api.AgentTurnOutput, error)
	AgentToolTurn(ctx context.Context, in api.AgentTurnInput) (api.AgentTurnOutput, error)
	AgentFinish(ctx context.Context, in api.AgentTurnInput) (api.NodeOutput, error)
}

// agentStep is the agent node run as one activity: its turns in a loop, each memoized on its own (a retried or resumed
// node asks no finished turn again, and the response cache holds every paid answer). Its output is the
// trajectory; agent_context and agent_patch read it. Today's Issue workflow runs the node as the Agent child
// workflow instead, each turn its own activity; this stays registered for Issue workflows started before, which
// replay through it.
func agentStep(ctx context.Context, j *job, p specs.AgentParams) (api.NodeOutput, error) {
	turns := j.env.Turns
	if turns == nil {
		return api.NodeOutput{}, permanentf(api.ErrUnsupported, "%s: the agent node runs as one activity only in a worker "+
			"(its turns are activities)", j.in.Step)
	}
	var state cas.Ref
	for turn := 0; turn < p.MaxTurns; turn++ {
		out, err := turns.AgentModelTurn(ctx, api.AgentTurnInput{Node: j.in, Turn: turn, State: state})
		if err != nil {
			return api.NodeOutput{}, err
		}
		state = out.State
		if out.Done {
			break
		}
		if out, err = turns.AgentToolTurn(ctx, api.AgentTurnInput{Node: j.in, Turn: turn, State: state}); err != nil {
			return api.NodeOutput{}, err
		}
		state = out.State
	}
	return turns.AgentFinish(ctx, api.AgentTurnInput{Node: j.in, State: state})
}

// agentParams decodes the agent's params, checking them against their declarations (edit_format, tool_calling,
// max_turns).
func (j *job) agentParams() (specs.AgentParams, error) {
	p, err := specs.Agent.Decode(j.in.Params)
	if err != nil {
		return p, permanentf(api.ErrBadInput, "%s: parameters: %v", j.in.Step, err)
	}
	return p, nil
}

// toolsHelp is the prompt's .Tools: the plain-text protocol, or a short list when tools are offered natively.
func toolsHelp(p specs.AgentParams) string {
	if p.ToolCalling == specs.ToolsNative {
		return agent.ToolsHelpNative
	}
	return agent.ToolsHelp
}

// loadTrajectory reads the trajectory a turn continues.
func (j *job) loadTrajectory(ctx context.Context, ref cas.Ref) (AgentTrajectory, error) {
	var t AgentTrajectory
	if err := cas.GetJSON(ctx, j.store, ref, &t); err != nil {
		return t, fmt.Errorf("instance %s: %s: agent trajectory: %w", j.in.Instance.ID, j.in.Step, err)
	}
	return t, nil
}

// startTrajectory renders the prompt and sets the tool output budget: the step's, or multiplier times the tokens
// of the budget input's context.
func (j *job) startTrajectory(ctx context.Context, p specs.AgentParams, issue string) (AgentTrajectory, error) {
	msgs, err := renderPrompt(p.Prompt, j.in.Step, struct {
		Issue, Tools, Format string
		MaxTurns             int
	}{issue, toolsHelp(p), p.Prompt.Formats[string(p.EditFormat)], p.MaxTurns})
	if err != nil {
		return AgentTrajectory{}, err
	}
	t := AgentTrajectory{Messages: msgs, Budget: p.ToolOutputBudget, EditFormat: p.EditFormat}
	if _, ok := j.in.Inputs["budget"]; ok {
		c, err := j.loadContext(ctx, "budget")
		if err != nil {
			return t, err
		}
		n, err := countTokens(p.Tokenizer, c.Render())
		if err != nil {
			return t, err
		}
		mult := p.Multiplier
		if mult == 0 {
			mult = 1
		}
		t.Budget = max(1, int(float64(n)*mult))
	}
	return t, nil
}

// turnTrajectory is the trajectory a model turn continues (a new one before the first turn). What its turns used
// counts in the node's rows if this turn fails it.
func (j *job) turnTrajectory(ctx context.Context, p specs.AgentParams, issue string, state cas.Ref) (AgentTrajectory, error) {
	if state == "" {
		return j.startTrajectory(ctx, p, issue)
	}
	t, err := j.loadTrajectory(ctx, state)
	if err == nil {
		j.calls.answeredBefore(t.usageRow())
	}
	return t, err
}

// AgentModelTurn asks the model for one turn of the trajectory in.State (a new one on turn 0) as one attempt on
// env's node (the turn's): a tool call, or the final edit. Its output is the trajectory with the answer (and the
// call's usage) added.
func AgentModelTurn(ctx context.Context, env Env, att *Attempt, in api.AgentTurnInput) (api.NodeOutput, error) {
	return attempt(ctx, env, att, func(ctx context.Context, j *job) (api.NodeOutput, error) {
		p, err := j.agentParams()
		if err != nil {
			return api.NodeOutput{}, err
		}
		inst, err := j.instance(ctx)
		if err != nil {
			return api.NodeOutput{}, err
		}
		t, err := j.turnTrajectory(ctx, p, inst.ProblemStatement, in.State)
		if err != nil {
			return api.NodeOutput{}, err
		}
		turnsLeft := p.MaxTurns - in.Turn
		off := &agent.OfflineInput{Issue: inst.ProblemStatement, Gold: inst.Patch, Format: string(p.EditFormat),
			TurnsLeft: turnsLeft}
		if standIn(p.Model) {
			for _, tn := range t.Turns {
				if tn.Call != nil {
					off.Steps = append(off.Steps, offlinetask.AgentStep{Call: *tn.Call, Result: tn.Result})
				}
			}
			m, err := j.snapshot(ctx)
			if err != nil {
				return api.NodeOutput{}, err
			}
			off.Seen = agent.SeenFromRanges(t.Seen).Context(inst.ProblemStatement, j.reader(ctx, m))
		}
		turn := AgentTurn{N: in.Turn}
		if turn.Request, err = cas.PutJSON(ctx, j.store, t.Messages); err != nil {
			return api.NodeOutput{}, err
		}
		req := llm.Request{Task: specs.Agent.Task, Messages: t.Messages, Sample: p.Sample, Offline: off}
		if p.ToolCalling == specs.ToolsNative {
			req.Tools = agent.NativeTools
		}
		resp, callRow, err := j.callModel(ctx, p.ModelParams, req)
		if err != nil {
			return api.NodeOutput{}, err
		}
		turn.ModelServed, _ = specs.ModelServed.Get(callRow)
		for _, k := range splitFields {
			if v, ok := callRow[k]; ok {
				if turn.Split == nil {
					turn.Split = map[string]float64{}
				}
				turn.Split[k] = toFloat(v)
			}
		}
		if turn.Answer, err = j.store.Put(ctx, []byte(resp.Text)); err != nil {
			return api.NodeOutput{}, err
		}
		turn.PromptTokens, turn.CompletionTokens, turn.CostUSD = resp.Usage.PromptTokens, resp.Usage.CompletionTokens, resp.CostUSD
		t.Messages = append(t.Messages, llm.Message{Role: "assistant", Content: resp.Text})
		call, isCall, perr := offlinetask.ParseAgentCall(resp.Text)
		switch {
		case !isCall:
			t.Done, t.Stop, t.Final = true, "answered", resp.Text
		case turnsLeft <= 1:
			t.Done, t.Stop, t.Final = true, "max_turns", resp.Text
		case perr != nil:
			turn.CallError = perr.Error()
		default:
			turn.Call = &call
		}
		t.Turns = append(t.Turns, turn)
		ref, err := cas.PutJSON(ctx, j.store, t)
		if err != nil {
			return api.NodeOutput{}, err
		}
		return api.NodeOutput{Ref: ref}, nil
	})
}

// agentSnapshot is the snapshot as the agent's tools read it: symlinks resolved inside it, regular files read
// through the job's reader; both come from the worker's text cache, so later turns read nothing from the store.
func (j *job) agentSnapshot(ctx context.Context, m repo.Manifest) (agent.Snapshot, error) {
	read := j.reader(ctx, m)
	s := agent.Snapshot{Paths: m.Paths(), Links: map[string]string{}}
	for _, e := range m.Files {
		if e.Mode != repo.ModeSymlink {
			continue
		}
		target, err := j.env.Text.Read(ctx, j.store, m, e.Path)
		if err != nil {
			return s, fmt.Errorf("instance %s: symlink %s: %w", j.in.Instance.ID, e.Path, err)
		}
		s.Links[e.Path] = target
	}
	s.Read = func(p string) (string, bool) {
		if _, link := s.Links[p]; link {
			return "", false
		}
		return read(p)
	}
	return s, nil
}

// AgentToolTurn runs the tool call of the trajectory's last turn (in.State) as one attempt on env's node (the
// turn's), and shows its result to the agent, cut to the budget's rest. A bad call (unknown tool, path outside the
// repository, bad regex) is shown as an error; it never fails the step.
func AgentToolTurn(ctx context.Context, env Env, att *Attempt, in api.AgentTurnInput) (api.NodeOutput, error) {
	return attempt(ctx, env, att, func(ctx context.Context, j *job) (api.NodeOutput, error) {
		p, err := j.agentParams()
		if err != nil {
			return api.NodeOutput{}, err
		}
		m, err := j.snapshot(ctx)
		if err != nil {
			return api.NodeOutput{}, err
		}
		t, err := j.loadTrajectory(ctx, in.State)
		if err != nil {
			return api.NodeOutput{}, err
		}
		j.calls.answeredBefore(t.usageRow()) // the node's rows count its turns if this tool call fails it
		if len(t.Turns) == 0 || t.Done {
			return api.NodeOutput{}, permanentf(api.ErrBadInput, "%s: no tool call to run", j.in.Step)
		}
		turn := &t.Turns[len(t.Turns)-1]
		budget := agent.Budget{Tokenizer: modelTokenizer(p.ModelParams), Limit: t.Budget, Used: t.ToolTokens}
		var text, tool string
		switch {
		case turn.CallError != "":
			text, tool = "error: "+turn.CallError+"\n", "?"
		case budget.Spent():
			text, tool = "[tool output budget spent: answer with what you have]\n", turn.Call.Tool
		default:
			tool = turn.Call.Tool
			snap, err := j.agentSnapshot(ctx, m)
			if err != nil {
				return api.NodeOutput{}, err
			}
			res, terr := snap.Run(*turn.Call, agent.Limits{MaxHits: p.MaxHits, MaxLines: p.MaxLines})
			if terr != nil {
				text, turn.Refused = "error: "+terr.Error()+"\n", errors.Is(terr, agent.ErrOutside)
				break
			}
			shown, err := budget.Show(res)
			if err != nil {
				return api.NodeOutput{}, permanent(api.ErrBadInput, err)
			}
			seen := agent.SeenFromRanges(t.Seen)
			seen.Add(shown.Lines)
			t.Seen = seen.Ranges()
			text, turn.ResultTokens, turn.ResultCut = shown.Text, shown.Tokens, shown.Cut
			t.ToolTokens = budget.Used
		}
		if err := j.readFailure(); err != nil {
			return api.NodeOutput{}, err // a store read failed: the result would miss a file
		}
		turn.Result = text
		left := p.MaxTurns - in.Turn - 1
		msg := fmt.Sprintf("Result of %s (%d turns left):\n%s", tool, left, text)
		if left <= 1 {
			msg += "This is your last turn: answer with the edit now; no more tool calls.\n"
		}
		t.Messages = append(t.Messages, llm.Message{Role: "user", Content: msg})
		ref, err := cas.PutJSON(ctx, j.store, t)
		if err != nil {
			return api.NodeOutput{}, err
		}
		return api.NodeOutput{Ref: ref}, nil
	})
}

// AgentFinish is the agent node's output: the trajectory in.State and its row fields (turns, tool calls by kind,
// tokens of tool output seen and of prompts paid, and the model calls' usage, which the Issue workflow sums over a
// row). It reads the trajectory from store.
func AgentFinish(ctx context.Context, store cas.Store, in api.AgentTurnInput) (api.NodeOutput, error) {
	j := &job{in: in.Node, store: store}
	t, err := j.loadTrajectory(ctx, in.State)
	if err != nil {
		return api.NodeOutput{}, err
	}
	row := t.usageRow()
	specs.AgentTurns.Set(row, len(t.Turns))
	specs.AgentToolOutputTokens.Set(row, t.ToolTokens)
	specs.AgentBudgetTokens.Set(row, t.Budget)
	stop := t.Stop
	if !t.Done {
		stop = "max_turns"
	}
	specs.AgentStop.Set(row, stop)
	calls, refused, badCalls := 0, 0, 0
	byKind := map[string]int{}
	for _, tn := range t.Turns {
		if tn.ModelServed != "" {
			specs.ModelServed.Set(row, tn.ModelServed)
		}
		switch {
		case tn.Call != nil:
			calls++
			byKind[tn.Call.Tool]++
		case tn.CallError != "":
			badCalls++
		}
		if tn.Refused {
			refused++
		}
	}
	specs.AgentToolCalls.Set(row, calls)
	specs.AgentRefusedCalls.Set(row, refused)
	specs.AgentBadCalls.Set(row, badCalls)
	for _, k := range offlinetask.AgentTools {
		specs.AgentCalls[k].Set(row, byKind[k])
	}
	// Seen vs paid: the tool output shown once, against every turn's prompt (the conversation is sent again each
	// turn) and answer.
	prompt, _ := specs.PromptTokens.Get(row)
	completion, _ := specs.CompletionTokens.Get(row)
	specs.AgentTokensPaid.Set(row, prompt+completion)
	return api.NodeOutput{Ref: in.State, Row: row}, nil
}

// usageRow is the usage of the trajectory's model calls as the agent node's row counts it: calls, tokens and cost,
// and the split by price when its turns have one.
func (t AgentTrajectory) usageRow() map[string]any {
	row := map[string]any{}
	var prompt, completion int
	var cost float64
	for _, tn := range t.Turns {
		prompt, completion, cost = prompt+tn.PromptTokens, completion+tn.CompletionTokens, cost+tn.CostUSD
		for k, v := range tn.Split {
			if k == specs.CachedTokens.Name || k == specs.CacheWriteTokens.Name {
				n, _ := row[k].(int)
				row[k] = n + int(v)
				continue
			}
			f, _ := row[k].(float64)
			row[k] = f + v
		}
	}
	specs.ModelCalls.Set(row, len(t.Turns))
	specs.PromptTokens.Set(row, prompt)
	specs.CompletionTokens.Set(row, completion)
	specs.CostUSD.Set(row, cost)
	return row
}

// agentInput is the finished trajectory of the agent node this step reads.
func (j *job) agentInput(ctx context.Context) (AgentTrajectory, error) {
	src, err := j.input("agent")
	if err != nil {
		return AgentTrajectory{}, err
	}
	return j.loadTrajectory(ctx, src.Ref)
}

// agentContextStep is the union of every repository line the agent saw, as a context: measure reads it like any
// method's, so the agent gets context_tokens, rho, epsilon and gold_line_share.
func agentContextStep(ctx context.Context, j *job, _ specs.AgentContextParams) (api.NodeOutput, error) {
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	t, err := j.agentInput(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	c := agent.SeenFromRanges(t.Seen).Context(inst.ProblemStatement, j.reader(ctx, m))
	if err := j.readFailure(); err != nil {
		return api.NodeOutput{}, err
	}
	return j.putContext(ctx, c)
}

// agentPatchStep reads the agent's final answer as a patch, with the patch step's parsers and its row fields
// (patch_parse_error, patch_recounted). A trajectory that ended without an answer is an empty patch.
func agentPatchStep(ctx context.Context, j *job, _ specs.AgentPatchParams) (api.NodeOutput, error) {
	_, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	t, err := j.agentInput(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	row := map[string]any{}
	patch := recordPatch(row, t.Final, t.EditFormat, j.reader(ctx, m))
	if err := j.readFailure(); err != nil {
		return api.NodeOutput{}, err
	}
	ref, err := j.store.Put(ctx, []byte(patch))
	if err != nil {
		return api.NodeOutput{}, err
	}
	return api.NodeOutput{Ref: ref, Row: row}, nil
}

// splitFields are the usage row fields that split a call's usage by price (usageRow).
var splitFields = []string{specs.CachedTokens.Name, specs.CacheWriteTokens.Name, specs.CostInputUSD.Name,
	specs.CostCachedUSD.Name, specs.CostOutputUSD.Name}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	return 0
}
