// demo: CQ2-CARE, its three ablations and the two reference methods on ctxlab's generated demo benchmark. Needs no
// network with the default model (the offline stand-in, which is not a language model).
//
//   starter run specs/demo.jsonnet                                  # offline stand-in model
//   starter run specs/demo.jsonnet --ext-str model=openai \
//       --ext-str openai_model=gpt-4o-mini                          # an OpenAI-compatible endpoint (README)
local ctxlab = import 'ctxlab.libsonnet';

local model = ctxlab.ext('model', 'offline');

ctxlab.experiment({
  name: 'demo',
  dataset: ctxlab.datasets.demo,
  models: [
    if model == 'offline' then ctxlab.models.offline
    else if model == 'openai' then ctxlab.models.openai(ctxlab.ext('openai_model', 'gpt-4o-mini'))
    else error "ext var model must be 'offline' or 'openai', got '%s'" % model,
  ],
  methods: [ctxlab.methods.no_source, ctxlab.methods.oracle_files, ctxlab.methods.cq2care] + ctxlab.cq2care.ablations,
  limits: { concurrency: 4 },
})
