// paper_baselines.libsonnet: the baselines' part of the study (PAPER.md's table and controlled experiments), as a
// function of the library and the budget anchor (CQ2-CARE in the paper). paper.jsonnet imports it:
//
//   local baselines = (import 'paper_baselines.libsonnet')(ctxlab, ctxlab.methods.cq2care);
//   ... methods: [ctxlab.methods.cq2care, ctxlab.methods.oracle_files, ctxlab.methods.no_source] + baselines,
//
// offline_only=true keeps the methods that need no external service (no embeddings endpoint, no compression
// server): what specs/demo.jsonnet runs. candidates, when given, is a method whose context holds the anchor's
// candidate files (for "LongCodeZip trimming CQ2-CARE's candidate files to budget").
function(ctxlab, anchor, offline_only=false, candidates=null)
  local b = ctxlab.baselines;
  local m = ctxlab.methods;
  local fit(method) = b.fitted(method, anchor);
  local offline_fitted = [
    // Retrieval at the anchor's per-issue budget: BM25 over the four chunk units and SWE-bench's file level.
    fit(m.bm25_definition),
    fit(m.bm25_function),
    fit(m.bm25_window),
    fit(m.bm25_file),
    fit(m.bm25_swebench),
    // SweRank's listwise reranker (the model under test) over BM25 retrieval of functions.
    fit(m.swerank_bm25),
    // Whole files ranked by similarity, never cut (a budget between two file counts is recorded, not met).
    fit(m.whole_files_bm25),
    // The in-process stand-in compressor, fitted like a real one.
    fit(m.fake_compressor),
    // The anchor's own context, corrupted: 20% of the tokens of every line, or 20% of its lines, deleted.
    b.corrupted(anchor, 'tokens', 0.2),
    b.corrupted(anchor, 'lines', 0.2),
    // Pairings: the anchor's files at a compressor's verbatim rate; the anchor's whole-file text over BM25's files.
    b.same_files_other_text(anchor, fit(m.fake_compressor)),
    b.same_text_other_files(anchor, fit(m.bm25_function)),
    // The same files, compressed (other text).
    b.compress_files(anchor, 'fake', 0.5),
  ];
  // Budget vs resolve: BM25 over functions at 0.25x, 0.5x and 2x the anchor (1x is above).
  local offline_sweep = [x for x in b.budget_sweep(m.bm25_function, anchor) if x.name != m.bm25_function.name];
  local offline = offline_fitted + offline_sweep;
  local services_fitted = [
    // Dense retrieval (OPENAI_BASE_URL / OPENAI_API_KEY name an embeddings endpoint).
    fit(m.dense_function),
    fit(m.whole_files_dense),
    fit(m.swerank_retrieve),
    // SweRank's full pipeline: its dense retrieval, then its listwise reranker.
    fit(m.swerank),
    // Compressors, each with its rate fitted to the budget (CTXLAB_COMPRESS_URL names the compression server).
    fit(m.llmlingua2),
    fit(m.longllmlingua),
    fit(m.longcodezip),
    fit(m.swepruner),
    // LLMLingua-2 on the anchor's own files: token-level; SWE-Pruner, a line pruner, for the whole-line variant.
    b.compress_files(anchor, 'llmlingua2', 0.5),
    b.compress_files(anchor, 'swepruner', 0.5),
  ];
  local services_sweep = [
    x
    for x in b.budget_sweep(m.bm25_swebench, anchor) + b.budget_sweep(m.llmlingua2, anchor)
    if x.name != m.bm25_swebench.name && x.name != m.llmlingua2.name
  ];
  local trimmed_candidates =
    if candidates == null then []
    else [b.fitted(b.compress_files(candidates, 'longcodezip', 1), anchor, name='longcodezip_%s_candidates' % candidates.name)];
  local services = services_fitted + services_sweep + trimmed_candidates;
  if offline_only then offline else offline + services
