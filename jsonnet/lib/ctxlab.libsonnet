// ctxlab.libsonnet: the library experiment specs are written with.
//
//   local ctxlab = import 'ctxlab.libsonnet';
//   ctxlab.experiment({ name: 'demo', dataset: ctxlab.datasets.demo, models: [ctxlab.models.offline],
//                       methods: [ctxlab.methods.no_source, ctxlab.methods.oracle_files] })
//
// It is embedded in the ctxlab binary (package ctxlab/jsonnet), so specs need no library path. Everything it returns
// is plain data: a spec may build the same objects by hand. The compiled form is documented in specs/experiment.go;
// the activities a step may name, and the inputs each takes, are in specs/catalog.go.
//
// Adding a method: write its context step (and any steps it needs before that) and hand them to ctxlab.method,
// which adds the shared head (checkout) and tail (patch, measure, grade). Steps with equal activity, params and
// inputs are run once per issue however many methods declare them, so methods may repeat shared work freely.
local catalog_defaults = std.native('ctxlab_defaults')();
{
  // Defaults ctxlab.experiment fills in, so that compiled JSON is explicit: specs.ExperimentDefaults (the values
  // SetDefaults fills: tokenizer, dataset.repos, grading and limits), read from the compiled Go, never a copy.
  // grading.model_tests: 'drop' (default) resets the model patch's test files (Go *_test.go, testdata/;
  // Python test_*.py, *_test.py, conftest.py, pytest.ini, anything under tests/ or test/; any file of the test
  // patch) to the base commit before the tests run and lists them on the row (patch_test_files_dropped); 'keep'
  // leaves all but the test patch's. grading.tests: 'files' (default) runs the test patch's files (Python, as the
  // SWE-bench harness does); 'listed' runs exactly FAIL_TO_PASS and PASS_TO_PASS (local executor only).
  // grading.test_cmd: a string for every instance, or an object by language ('go', 'python') and by repository
  // ('owner/name'), a repository's command winning over its language's. grading.isolation: 'sandbox' (default)
  // runs the code under test as a dedicated uid in its own pid, mount and network namespaces where the worker is
  // root on Linux (rows say grade_isolation); 'none' only in its own process group.
  defaults:: std.native('ctxlab_experiment_defaults')(),

  // experiment(cfg) is a whole experiment: cfg with the defaults filled in where it leaves them out. Nested objects
  // merge (limits: { concurrency: 8 } keeps retries: 3); lists, such as models and methods, are taken as given.
  experiment(cfg)::
    assert std.isObject(cfg) : 'ctxlab.experiment: cfg must be an object, got ' + std.type(cfg);
    std.mergePatch(self.defaults, cfg),

  // ext(name, default) is the value of the external variable name (--ext-str or --ext-code), or default when it was
  // not given. It reads the ctxlab_ext variable, which ctxlab's compiler always defines; std.extVar(name) also works
  // but fails when the variable is not given.
  ext(name, default)::
    std.get(std.extVar('ctxlab_ext'), name, default),

  // param_defaults(activity, fields) is the named fields of the activity's default params, read from the compiled
  // catalog (each kind's Defaults in specs/kind_*.go keeps them once). A library writes the knobs it means into the
  // spec explicitly, so that a compiled spec says them, without a second copy of their values.
  param_defaults(activity, fields)::
    assert std.objectHas(catalog_defaults, activity) : 'ctxlab.param_defaults: unknown activity ' + activity;
    local d = catalog_defaults[activity];
    { [f]: d[f] for f in fields },

  // step(id, activity, params, inputs) is one node of a method's DAG. inputs maps the activity's input names to ids
  // of other steps of the same method, e.g. { checkout: 'checkout' }.
  step(id, activity, params={}, inputs={})::
    assert std.isString(id) : 'ctxlab.step: id must be a string, got ' + std.type(id);
    assert std.isString(activity) : 'ctxlab.step %s: activity must be a string, got %s' % [id, std.type(activity)];
    assert std.isObject(params) : 'ctxlab.step %s: params must be an object, got %s' % [id, std.type(params)];
    assert std.isObject(inputs) : 'ctxlab.step %s: inputs must be an object, got %s' % [id, std.type(inputs)];
    { id: id, activity: activity }
    + (if std.length(params) > 0 then { params: params } else {})
    + (if std.length(inputs) > 0 then { inputs: inputs } else {}),

  // head is the step every method starts with: the instance's repository at its base commit.
  head:: [self.step('checkout', 'checkout')],

  // patch_params are the patch step's default params: a unified diff, asked for with CQ2-CARE's patch prompt, so
  // that every method's patch is written under the same instructions.
  patch_params:: $.param_defaults('patch', ['format']) { prompt: $.cq2care.prompts.patch },

  // tail(context, patch) is the steps every method ends with, reading the context from the step named context: the
  // model writes a patch (patch holds the patch step's params), measure computes rho, epsilon and tokens, grade runs
  // the tests.
  tail(context='context', patch=$.patch_params):: [
    self.step('patch', 'patch', patch, { checkout: 'checkout', context: context }),
    self.step('measure', 'measure', {}, { checkout: 'checkout', context: context, patch: 'patch' }),
    self.step('grade', 'grade', {}, { checkout: 'checkout', patch: 'patch' }),
  ],

  // method(name, context, steps, patch) is a whole method: checkout, then steps (the work between checkout and the
  // context, such as an inventory or a localizer, each a ctxlab.step), then the context step, then the tail.
  method(name, context, steps=[], patch=$.patch_params)::
    assert std.isString(name) : 'ctxlab.method: name must be a string, got ' + std.type(name);
    assert std.isObject(context) && std.objectHas(context, 'id')
           : 'ctxlab.method %s: context must be a step (ctxlab.step), got %s' % [name, std.type(context)];
    { name: name, steps: $.head + steps + [context] + $.tail(context.id, patch) },

  // A method (or the experiment) may set samples: k, k patch samples per context, each its own arm and row (row
  // field sample) sharing every node above the patch (docs/specs.md, "Repeated patch samples"):
  //   ctxlab.methods.cq2care { samples: 5 }
  // override(method, id, fields) is method with its step id merged with fields, for variants and ablations:
  //   ctxlab.override(m, 'patch', { params+: { format: 'whole' } }) + { name: 'm_whole' }
  override(method, id, fields)::
    assert std.member([s.id for s in method.steps], id)
           : 'ctxlab.override: method %s has no step %s' % [method.name, id];
    method { steps: [if s.id == id then s + fields else s for s in method.steps] },

  // Methods ready to use. Each is a ctxlab.method; its context step is named 'context'.
  methods:: {
    // no_source: the issue text only.
    no_source: $.method('no_source', $.step('context', 'no_source', inputs={ checkout: 'checkout' })),
    // oracle_files: the whole files the gold patch edits (an upper reference, not a method an agent could use).
    oracle_files: $.method('oracle_files', $.step('context', 'oracle_files', inputs={ checkout: 'checkout' })),
    // agent(opts): the model gathers its own context with read-only tools, turn by turn, then edits; the union of
    // what it saw is its context. opts: name ('agent'), max_turns, tool_output_budget (tokens of tool output it
    // may see; 0: none), edit_format ('diff' or 'search_replace'), prompts ($.agent_prompts), and anchor (a
    // method) with multiplier: the budget is multiplier x the anchor's context tokens on each issue.
    agent(opts={}):: $.agent_method(opts),
  } + $.cq2care.methods + $.baselines.methods,

  // agent_prompts: the agent's prompt (fields {{.Issue}}, {{.Tools}}, {{.MaxTurns}}, {{.Format}}) and the edit
  // formats, which are the patch step's.
  agent_prompts:: {
    system: 'You are an expert software engineer. You find the code an issue is about, then fix it with a small, correct edit.',
    user: |||
      <issue>
      {{.Issue}}
      </issue>

      {{.Tools}}
      You have at most {{.MaxTurns}} turns. When you have seen the code to change, stop calling tools and write the
      change that resolves the issue. {{.Format}}
    |||,
    formats: $.cq2care.prompts.patch.formats,
  },

  agent_method(opts)::
    local o = { name: 'agent', prompts: $.agent_prompts, anchor: null, multiplier: 1 } + opts;
    local knobs = $.param_defaults('agent', ['max_turns', 'edit_format'])
                  + { [k]: o[k] for k in ['max_turns', 'tool_output_budget', 'edit_format'] if std.objectHas(o, k) };
    local method = {
      name: o.name,
      steps: $.head + [
        $.step('agent', 'agent', knobs { prompt: o.prompts }, { checkout: 'checkout' }),
        $.step('context', 'agent_context', {}, { checkout: 'checkout', agent: 'agent' }),
        $.step('patch', 'agent_patch', {}, { checkout: 'checkout', agent: 'agent', context: 'context' }),
        $.step('measure', 'measure', {}, { checkout: 'checkout', context: 'context', patch: 'patch' }),
        $.step('grade', 'grade', {}, { checkout: 'checkout', patch: 'patch' }),
      ],
    };
    if o.anchor == null then method else $.baselines.fitted(method, o.anchor, o.multiplier, name=o.name),

  // CQ2-CARE, its prompts and ablations (cq2care.libsonnet), and the baselines (baselines.libsonnet) live in files of
  // their own; each is a function of this library.
  cq2care:: (import 'cq2care.libsonnet')($),
  baselines:: (import 'baselines.libsonnet')($),

  // Models every method runs under. API keys come from the environment, never from a spec.
  models:: {
    // offline: a deterministic stand-in that needs no network; not a language model.
    offline: { name: 'offline', provider: 'offline' },
    // openai(id, ...): a model behind an OpenAI-compatible endpoint; price is dollars per million tokens:
    // { input, output }, and optionally cached_input (cache reads) and cache_write (cache writes), each priced apart.
    // tokenizer (used unless the experiment pins one): 'o200k_base' or 'cl100k_base' (tiktoken), or
    // 'endpoint', the server's own POST /tokenize (llama.cpp, vLLM); null: the tiktoken encoding of an OpenAI model
    // id, else o200k_base (an estimate for other models). docs/models.md.
    openai(id, price={ input: 0, output: 0 }, temperature=0, max_tokens=4096, seed=0, tokenizer=null):: {
      name: id,
      provider: 'openai',
      id: id,
      price: price,
      temperature: temperature,
      max_tokens: max_tokens,
      seed: seed,
    } + (if tokenizer == null then {} else { tokenizer: tokenizer }),
    // anthropic(id, ...): a Claude model through Anthropic's Messages API (key in ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL
    // for a gateway); price as openai's, cache reads at cached_input and cache writes at cache_write. max_tokens is
    // always sent (the API requires it); temperature=null sends none. A shared prefix of 1,024 tokens or more is
    // marked for Anthropic's prompt cache. tokenizer: 'endpoint' counts with Anthropic's count_tokens, else as
    // openai's (o200k_base: an estimate). docs/models.md.
    anthropic(id, price={ input: 0, output: 0 }, temperature=0, max_tokens=4096, tokenizer=null)::
      { name: id, provider: 'anthropic', id: id, price: price, max_tokens: max_tokens }
      + (if temperature == null then {} else { temperature: temperature })
      + (if tokenizer == null then {} else { tokenizer: tokenizer }),
    // replay(model): the answers a finished run received from model (an openai or anthropic model as above), read
    // from that run's response cache (CTXLAB_REPLAY_DIR: its run folder, or the --cache folder it used); it calls no
    // model, and a request the run never asked fails its step, naming the request. docs/models.md.
    replay(model):: model { provider: 'replay', replays: model.provider },
  },

  // Datasets. file is relative to the spec's folder; repos is a template with {repo}, {owner}, {name} and
  // {dataset_dir} (the folder of file).
  datasets:: {
    // demo: small repositories with real bugs that ctxlab generates itself into the run folder.
    demo: { generate: 'demo', file: 'demo.jsonl', repos: '{dataset_dir}/repos/{repo}' },
    // swebench(file, repos): a SWE-bench-format JSONL file and where each instance's repository is.
    swebench(file, repos='{dataset_dir}/repos/{repo}'):: { file: file, repos: repos },
  },
}
