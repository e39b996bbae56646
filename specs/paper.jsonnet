// paper: the study of PAPER.md ("Skip the Compressor"): CQ2-CARE with the paper's settings, its three ablations, the
// two reference methods and every baseline (retrievers, compressors, corruptions and pairings, the budget sweep; see
// paper_baselines.libsonnet), each baseline fitted per issue to CQ2-CARE's context size, under the study's two models.
// Dense retrieval needs an embeddings endpoint (the same OPENAI_BASE_URL) and the compressors a compression server
// (README, "Compression protocol").
//
// What to set (README, "Running specs/paper.jsonnet"):
//   OPENAI_BASE_URL, OPENAI_API_KEY   the endpoint GPT is served from (environment only, never the spec)
//   ANTHROPIC_API_KEY                 Claude's key, for Anthropic's Messages API (ANTHROPIC_BASE_URL for a gateway)
//   --ext-str claude_provider=openai  Claude from the OpenAI-compatible endpoint instead (a router serving both)
//   --ext-str claude_tokenizer=o200k_base  count Claude's budgets in o200k_base, not its own count_tokens
//   --ext-str dataset=FILE            SWE-bench-format JSONL of the 300 issues (default data/swe-rebench-300.jsonl,
//                                     relative to this folder)
//   --ext-str repos=TEMPLATE          where each repository is: a folder template or a git URL template
//   --ext-str gpt=ID --ext-str claude=ID                 the models' ids
//   --ext-str gpt_price=1.25/10 --ext-str claude_price=15/75   input/output dollars per million tokens (cost_usd),
//                                     optionally /CACHED_INPUT/CACHE_WRITE (e.g. 15/75/1.5/18.75)
//
//   starter run specs/paper.jsonnet --ext-str dataset=/data/swe-rebench-300.jsonl --ext-str gpt=gpt-5.6 ...
local ctxlab = import 'ctxlab.libsonnet';

// price('gpt_price') reads "INPUT/OUTPUT" or "INPUT/OUTPUT/CACHED_INPUT/CACHE_WRITE" dollars per million tokens.
local price(name) =
  local parts = std.split(ctxlab.ext(name, '0/0'), '/');
  assert std.length(parts) == 2 || std.length(parts) == 4 :
         '%s must be INPUT/OUTPUT[/CACHED_INPUT/CACHE_WRITE] dollars per million tokens, e.g. 1.25/10' % name;
  { input: std.parseJson(parts[0]), output: std.parseJson(parts[1]) }
  + (if std.length(parts) == 4 then { cached_input: std.parseJson(parts[2]), cache_write: std.parseJson(parts[3]) }
     else {});
local baselines = (import 'paper_baselines.libsonnet')(ctxlab, ctxlab.methods.cq2care);
local gpt(id, p) = ctxlab.models.openai(id, price=p, temperature=0, max_tokens=16384, seed=0);
// Claude through Anthropic's API natively (its prompt cache, its usage), or through the OpenAI-compatible endpoint.
local claude(id, p) =
  local provider = ctxlab.ext('claude_provider', 'anthropic');
  assert provider == 'anthropic' || provider == 'openai' :
         "claude_provider must be 'anthropic' or 'openai', got '%s'" % provider;
  // Natively, budgets count in Claude's own tokens (count_tokens); claude_tokenizer=o200k_base counts them as the
  // paper did, in one tokenizer for both models. Through the OpenAI-compatible endpoint, o200k_base estimates them.
  local tokenizer = ctxlab.ext('claude_tokenizer', 'endpoint');
  local native = ctxlab.models.anthropic(id, price=p, temperature=0, max_tokens=16384, tokenizer=tokenizer);
  if provider == 'anthropic' then native
  else gpt(id, p);

ctxlab.experiment({
  name: 'paper',
  dataset: ctxlab.datasets.swebench(ctxlab.ext('dataset', 'data/swe-rebench-300.jsonl'),
                                    repos=ctxlab.ext('repos', 'https://github.com/{repo}.git')),
  models: [
    gpt(ctxlab.ext('gpt', 'gpt-5.6'), price('gpt_price')),
    claude(ctxlab.ext('claude', 'claude-opus-5'), price('claude_price')),
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
    providers: { openai: { rps: 8, in_flight: 16 }, anthropic: { rps: 8, in_flight: 16 } },
  },
})
