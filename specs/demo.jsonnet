// demo: CQ2-CARE, its three ablations and the two reference methods on ctxlab's generated demo benchmark. Needs no
// network with the default model (the offline stand-in, which is not a language model).
//
//   starter run specs/demo.jsonnet                                  # offline stand-in model
//   starter run specs/demo.jsonnet --ext-str model=openai \
//       --ext-str openai_model=gpt-4o-mini                          # an OpenAI-compatible endpoint (README)
//   starter run specs/demo.jsonnet --ext-str model=anthropic \
//       --ext-str anthropic_model=claude-haiku-4-5                  # Anthropic's API (ANTHROPIC_API_KEY)
//   ... --ext-str openai_tokenizer=endpoint                         # budgets in the server's own tokens
//   ... --ext-str replay=true --runs OTHER                          # a finished run's answers, asking no model
//                                                                    # (CTXLAB_REPLAY_DIR: its run folder)
local ctxlab = import 'ctxlab.libsonnet';

local model = ctxlab.ext('model', 'offline');
// tokenizer: the experiment's (default 'model': each model's own; 'o200k_base' pins one for every model);
// openai_tokenizer: the openai model's own ('endpoint': its server's /tokenize). docs/models.md, Tokenizers.
local tokenizer = ctxlab.ext('tokenizer', null);

// Baselines (PAPER.md): every one that needs no external service, each fitted per issue to the anchor's context
// tokens: CQ2-CARE's, as in the paper.
local baselines = (import 'paper_baselines.libsonnet')(ctxlab, ctxlab.methods.cq2care, offline_only=true);

// replay=true: the model's answers in the finished run CTXLAB_REPLAY_DIR names (docs/models.md, Replay).
local replayed(m) = if ctxlab.ext('replay', 'false') == 'true' then ctxlab.models.replay(m) else m;

ctxlab.experiment({
  name: 'demo',
  dataset: ctxlab.datasets.demo,
  models: [replayed(
    if model == 'offline' then ctxlab.models.offline
    else if model == 'openai' then ctxlab.models.openai(ctxlab.ext('openai_model', 'gpt-4o-mini'),
                                                        tokenizer=ctxlab.ext('openai_tokenizer', null))
    else if model == 'anthropic' then ctxlab.models.anthropic(ctxlab.ext('anthropic_model', 'claude-haiku-4-5'),
                                                              price={
                                                                input: 1,
                                                                output: 5,
                                                                cached_input: 0.1,
                                                                cache_write: 1.25,
                                                              })
    else error "ext var model must be 'offline', 'openai' or 'anthropic', got '%s'" % model
  )],
  methods: [ctxlab.methods.no_source, ctxlab.methods.oracle_files, ctxlab.methods.cq2care] + ctxlab.cq2care.ablations
           // The agent gathers its own context with read-only tools, its tool output capped at CQ2-CARE's tokens.
           + [ctxlab.baselines.fitted(ctxlab.methods.agent(), ctxlab.methods.cq2care)]
           + baselines,
  anchor: 'cq2care',
  limits: { concurrency: 4 },
  // acme/relnotes requires example.org/textwrap, which the generated dataset publishes in {dataset_dir}/goproxy
  // (downloaded once before grading, then tests run offline); acme/tablefmt (Python) lists PASS_TO_PASS tests in
  // files its test patch does not touch, so its tests are run by their listed ids, with the standard library's
  // unittest: a bare python3 grades the demo, no pytest needed.
  grading: {
    goproxy: 'file://{dataset_dir}/goproxy',
    tests: 'listed',
    test_cmd: { python: 'python3 -m unittest -v' },
  },
} + (if tokenizer == null then {} else { tokenizer: tokenizer }))
