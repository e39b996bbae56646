// baselines.libsonnet: retrieval, compression and corruption baselines (PAPER.md). A function of ctxlab.libsonnet,
// reached as ctxlab.baselines (helpers) and ctxlab.methods (the methods).
//
// Methods here show a fixed budget (retrievers: max_tokens, 13,800 by default, PAPER.md's mean CQ2-CARE context;
// compressors: a fixed rate). For the paper's comparison at equal per-issue budgets wrap them with fitted():
//
//   local b = ctxlab.baselines;
//   b.fitted(ctxlab.methods.bm25_function, anchor)            // fits to the anchor's tokens on each issue, ±2%
//   b.budget_sweep(ctxlab.methods.bm25_function, anchor)      // 0.25x, 0.5x, 1x, 2x the anchor: budget vs resolve
//   b.corrupted(anchor, 'tokens', 0.2)                        // the anchor's context with 20% of tokens deleted
//   b.same_files_other_text(anchor, other) / b.same_text_other_files(anchor, other)
//
// The anchor is any method: its steps up to its context step are included in the fitted method under ids prefixed
// 'anchor.', so they resolve to the anchor's own nodes (equal activity, params and inputs are one node per issue)
// and run once; the fitted step reads the anchor's context through its input named budget.
function(ctxlab) {
  local lib = self,
  local tail = ['patch', 'measure', 'grade'],

  // contextOf(method) is the id of the step whose output the method's patch step reads.
  contextOf(method)::
    local p = [s for s in method.steps if s.id == 'patch'];
    assert std.length(p) == 1 : 'method %s has no patch step' % method.name;
    p[0].inputs.context,

  // prefixed(method, prefix) is method's steps before its tail, with ids (and the inputs naming them) prefixed and
  // marked borrowed: they are method's nodes, and their row fields stay in method's rows.
  prefixed(method, prefix)::
    [
      s { id: prefix + s.id, borrowed: true }
      + (if std.objectHas(s, 'inputs') then { inputs: { [k]: prefix + s.inputs[k] for k in std.objectFields(s.inputs) } }
         else {})
      for s in method.steps
      if !std.member(tail, s.id)
    ],

  // derive(name, base, context) is a method built on base: base's steps under ids prefixed 'base.' (the same
  // nodes as base's own), then context (a ctxlab.step that may read 'base.<id>'), then the shared tail.
  derive(name, base, context, steps=[])::
    ctxlab.method(name, context, lib.prefixed(base, 'base.') + steps),

  local fittable = ['retrieve', 'compress', 'listwise_rerank'],
  local mult(m) = std.strReplace(std.toString(m), '.', '_'),

  // fitted(method, anchor, multiplier, tolerance, name, source_factor) fits method's knob on every issue to
  // multiplier x the anchor's context tokens, within ±tolerance. The row records budget_tokens,
  // budget_anchor_tokens, budget_evals, budget_knob, budget_reached and, for a budget no knob value reaches,
  // budget_error. A compressor whose input is a retrieve step also gets that step fitted, to source_factor times
  // the budget, so its rate is fitted over a source of a size proportional to the budget (about 1/source_factor).
  fitted(method, anchor, multiplier=1, tolerance=0.02, name=null, source_factor=4)::
    local ctx = lib.contextOf(method);
    local step = [s for s in method.steps if s.id == ctx][0];
    // An agent's context is what it saw: its step's tool output budget is set to the target (a cap, not a fit).
    local agent = if step.activity == 'agent_context' then step.inputs.agent else null;
    assert std.member(fittable, step.activity) || agent != null
           : 'baselines.fitted: method %s: its context step %s (activity %s) has no knob to fit (fittable: %s)'
             % [method.name, ctx, step.activity, std.join(', ', fittable)];
    assert multiplier > 0 : 'baselines.fitted: multiplier must be positive, got %s' % multiplier;
    local sources = if step.activity == 'compress'
    then [s.id for s in method.steps if s.id == step.inputs.context && s.activity == 'retrieve'] else [];
    local budget = { budget: 'anchor.' + lib.contextOf(anchor) };
    method {
      name: if name != null then name else if multiplier == 1 then method.name else method.name + '_x' + mult(multiplier),
      steps: lib.prefixed(anchor, 'anchor.') + [
        if s.id == agent then s { params+: { multiplier: multiplier }, inputs+: budget }
        else if s.id == ctx && agent == null then s { params+: { multiplier: multiplier, tolerance: tolerance }, inputs+: budget }
        else if std.member(sources, s.id)
        then s { params+: { multiplier: multiplier * source_factor, tolerance: tolerance }, inputs+: budget }
        else s
        for s in method.steps
      ],
    },

  // budget_sweep(method, anchor, multipliers) is one fitted method per multiplier: a budget-vs-resolve curve.
  budget_sweep(method, anchor, multipliers=[0.25, 0.5, 1, 2])::
    [lib.fitted(method, anchor, m) for m in multipliers],

  // corrupted(method, mode, rate, seed) is method's context with a share rate of the tokens of every line
  // (mode 'tokens') or of its lines (mode 'lines') deleted, seeded and reproducible.
  corrupted(method, mode='tokens', rate=0.2, seed=0)::
    lib.derive('%s_%s%d' % [method.name, mode, std.round(rate * 100)],
               method,
               ctxlab.step('context',
                           'corrupt',
                           { mode: mode, rate: rate, seed: seed },
                           { checkout: 'checkout', context: 'base.' + lib.contextOf(method) })),

  // same_files_other_text(files, text): the files and lines of method files, made as non-verbatim as method text's
  // context is (files' rho, text's epsilon).
  same_files_other_text(files, text, seed=0)::
    ctxlab.method('%s_files_%s_text' % [files.name, text.name],
                  ctxlab.step('context',
                              'corrupt',
                              { mode: 'same_files_other_text', seed: seed },
                              {
                                checkout: 'checkout',
                                context: 'a.' + lib.contextOf(files),
                                other: 'b.' + lib.contextOf(text),
                              }),
                  lib.prefixed(files, 'a.') + lib.prefixed(text, 'b.')),

  // same_text_other_files(text, files): whole verbatim files, as text shows them, but the files method files
  // chose, in its order, cut to text's tokens (text's epsilon, files' rho).
  same_text_other_files(text, files)::
    ctxlab.method('%s_text_%s_files' % [text.name, files.name],
                  ctxlab.step('context',
                              'corrupt',
                              { mode: 'same_text_other_files' },
                              {
                                checkout: 'checkout',
                                context: 'a.' + lib.contextOf(text),
                                other: 'b.' + lib.contextOf(files),
                              }),
                  lib.prefixed(text, 'a.') + lib.prefixed(files, 'b.')),

  // retriever(name, unit, scorer, params) is a retrieval method over one chunk unit.
  retriever(name, unit, scorer='bm25', params={})::
    ctxlab.method(name, ctxlab.step('context',
                                    'retrieve',
                                    { unit: unit, scorer: scorer } + params,
                                    { checkout: 'checkout' })),

  // compressor(name, compressor, rate, source_tokens) compresses SWE-bench-style file-level BM25 retrieval of
  // source_tokens (32K by default) down at rate; fitted() fits the rate to the budget instead.
  compressor(name, compressor, rate=0.5, source_tokens=32000)::
    ctxlab.method(name,
                  ctxlab.step('context',
                              'compress',
                              { compressor: compressor, rate: rate },
                              { context: 'source' }),
                  [ctxlab.step('source',
                               'retrieve',
                               { unit: 'swebench_file', max_tokens: source_tokens },
                               { checkout: 'checkout' })]),

  // compress_files(method, compressor, rate) compresses method's own context at a fixed rate: the same files,
  // other text (PAPER.md: "LLMLingua-2 on the same files").
  compress_files(method, compressor, rate=0.5)::
    lib.derive('%s_%s_r%d' % [method.name, compressor, std.round(rate * 100)],
               method,
               ctxlab.step('context',
                           'compress',
                           { compressor: compressor, rate: rate },
                           { context: 'base.' + lib.contextOf(method) })),

  // The embedding model of dense retrieval; any model the OPENAI_BASE_URL endpoint serves.
  embedding_model:: 'text-embedding-3-small',

  // listwise_prompt is the listwise reranker's prompt, in SweRank's answer format. Fields: {{.Issue}}, {{.Count}},
  // {{.Candidates}} (each {{.ID}}, {{.Path}}, {{.Start}}, {{.End}}, {{.Text}}); a candidate's line must start with
  // its [ID], as the fake endpoint finds them so.
  listwise_prompt:: {
    system: 'You are a code ranking assistant. You rank code by how likely it is to need an edit that resolves an issue.',
    user: |||
      Here are {{.Count}} pieces of code from a repository, each marked with an identifier in brackets.
      {{range .Candidates}}
      [{{.ID}}] {{.Path}}, lines {{.Start}}-{{.End}}
      ```
      {{.Text}}
      ```
      {{end}}
      This issue was reported against the repository:

      <issue>
      {{.Issue}}
      </issue>

      Rank the {{.Count}} pieces of code by how likely each is to need an edit that resolves the issue, most likely
      first. Answer with every identifier, in the form [2] > [1] > [3], and nothing else.
    |||,
  },

  // swerank(name, scorer, params, model) is SweRank's pipeline, retrieve then rerank, as one listwise_rerank step:
  // functions ranked by scorer (dense: params.embedding_model), the top_k reranked by the model in windows of
  // window moved up by step (SweRank's 100, 10 and 5 by default), shown in that order up to the budget. model, when
  // given (a ctxlab.models.* value), reranks instead of the model under test.
  swerank(name, scorer='dense', params={}, model=null)::
    local p = ctxlab.param_defaults('listwise_rerank', ['unit', 'top_k', 'window', 'step'])
              + { scorer: scorer, prompt: lib.listwise_prompt } + params
              + (if model == null then {} else { model: model });
    // The kind's declaration checks each knob; this, how they go together (other types and ranges are its errors).
    assert !(std.isNumber(p.step) && std.isNumber(p.window) && p.window >= 2 && p.step > p.window)
           : 'baselines.swerank %s: step %s is larger than window %s' % [name, p.step, p.window];
    ctxlab.method(name, ctxlab.step('context', 'listwise_rerank', p, { checkout: 'checkout' })),

  methods: {
    // BM25 (SWE-bench's k1 = 0.9, b = 0.4, code-aware tokens) over PAPER.md's four chunk units.
    bm25_definition: lib.retriever('bm25_definition', 'definition'),
    bm25_function: lib.retriever('bm25_function', 'function'),
    bm25_window: lib.retriever('bm25_window', 'window', params={ window: 60 }),
    bm25_file: lib.retriever('bm25_file', 'file'),
    // SWE-bench's file-level retrieval baseline: each document is a file's path and contents.
    bm25_swebench: lib.retriever('bm25_swebench', 'swebench_file'),
    // Whole files ranked by similarity, never cut: a budget between two file counts is recorded as unreachable.
    whole_files_bm25: lib.retriever('whole_files_bm25', 'file', params={ partial: false }),
    whole_files_dense: lib.retriever('whole_files_dense',
                                     'file',
                                     'dense',
                                     { partial: false, embedding_model: lib.embedding_model }),
    // Dense retrieval over functions (CodeRankEmbed-style) through an OpenAI-compatible embeddings endpoint.
    dense_function: lib.retriever('dense_function', 'function', 'dense', { embedding_model: lib.embedding_model }),
    // SweRank's retrieval stage alone: dense retrieval of functions with its embedding model, served by the endpoint.
    swerank_retrieve: lib.retriever('swerank_retrieve',
                                    'function',
                                    'dense',
                                    { embedding_model: 'Salesforce/SweRankEmbed-Small' }),
    // SweRank's whole pipeline: that retrieval, then the listwise reranker (the model under test) over its top 100.
    swerank: lib.swerank('swerank', 'dense', { embedding_model: 'Salesforce/SweRankEmbed-Small' }),
    // SweRank's reranker over BM25 retrieval of functions: the pipeline without an embeddings endpoint (the demo's).
    swerank_bm25: lib.swerank('swerank_bm25', 'bm25'),
    // Compressors through the compression server (scripts/compress_server.py; CTXLAB_COMPRESS_URL).
    llmlingua2: lib.compressor('llmlingua2', 'llmlingua2'),
    longllmlingua: lib.compressor('longllmlingua', 'longllmlingua'),
    longcodezip: lib.compressor('longcodezip', 'longcodezip'),
    swepruner: lib.compressor('swepruner', 'swepruner'),
    // The in-process stand-in compressor (not a model): keeps the share rate of words, query words first.
    fake_compressor: lib.compressor('fake_compressor', 'fake'),
  },
}
