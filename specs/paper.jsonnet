// paper: the study of PAPER.md ("Skip the Compressor"): CQ2-CARE with the paper's settings, its three ablations, the
// two reference methods and every baseline (retrievers, compressors, corruptions and pairings, the budget sweep; see
// paper_baselines.libsonnet), each baseline fitted per issue to CQ2-CARE's context size, under the study's two models.
// Dense retrieval needs an embeddings endpoint (the same OPENAI_BASE_URL) and the compressors a compression server
// (README, "Compression protocol").
//
// What to set (README, "Running specs/paper.jsonnet"):
//   OPENAI_BASE_URL, OPENAI_API_KEY   the endpoint both models are served from (environment only, never the spec)
//   --ext-str dataset=FILE            SWE-bench-format JSONL of the 300 issues (default data/swe-rebench-300.jsonl,
//                                     relative to this folder)
//   --ext-str repos=TEMPLATE          where each repository is: a folder template or a git URL template
//   --ext-str gpt=ID --ext-str claude=ID                 the endpoint's model ids
//   --ext-str gpt_price=1.25/10 --ext-str claude_price=15/75   input/output dollars per million tokens (cost_usd)
//
//   starter run specs/paper.jsonnet --ext-str dataset=/data/swe-rebench-300.jsonl --ext-str gpt=gpt-5.6 ...
local ctxlab = import 'ctxlab.libsonnet';

// price('gpt_price') reads "INPUT/OUTPUT" dollars per million tokens.
local price(name) =
  local parts = std.split(ctxlab.ext(name, '0/0'), '/');
  assert std.length(parts) == 2 : '%s must be INPUT/OUTPUT dollars per million tokens, e.g. 1.25/10' % name;
  { input: std.parseJson(parts[0]), output: std.parseJson(parts[1]) };
local baselines = (import 'paper_baselines.libsonnet')(ctxlab, ctxlab.methods.cq2care);
local model(id, p) = ctxlab.models.openai(id, price=p, temperature=0, max_tokens=16384, seed=0);

ctxlab.experiment({
  name: 'paper',
  dataset: ctxlab.datasets.swebench(ctxlab.ext('dataset', 'data/swe-rebench-300.jsonl'),
                                    repos=ctxlab.ext('repos', 'https://github.com/{repo}.git')),
  models: [
    model(ctxlab.ext('gpt', 'gpt-5.6'), price('gpt_price')),
    model(ctxlab.ext('claude', 'claude-opus-5'), price('claude_price')),
  ],
  methods: [ctxlab.methods.no_source, ctxlab.methods.oracle_files, ctxlab.methods.cq2care] + ctxlab.cq2care.ablations
           + baselines,
  // Every baseline's budget is CQ2-CARE's context size on the same issue and model.
  anchor: 'cq2care',
  grading: { timeout: '30m' },
  // The study cost about $1,400 in API calls: the cap stops new paid calls a little above that (raise it and run
  // again to go on), and the provider limits keep the endpoint's rate limiter from answering 429s all day.
  limits: {
    concurrency: 16,
    retries: 5,
    spend_usd: std.parseJson(ctxlab.ext('spend_usd', '1500')),
    providers: { openai: { rps: 8, in_flight: 16 } },
  },
})
