// cq2care.libsonnet: CQ2-CARE (PAPER.md, Algorithm 1), its prompts and its ablations. A function of ctxlab.libsonnet;
// reach it as ctxlab.cq2care.
//
//   ctxlab.methods.cq2care                      the method with the paper's settings
//   ctxlab.cq2care.method('mine', prompts=ctxlab.cq2care.prompts + { patch+: { system: '...' } }, format='search_replace')
//   ctxlab.cq2care.ablations                    [no_evidence, single_sample, patch_resample], built from cq2care's steps
//
// Steps (ids within a method): inventory -> localize0, localize1, localize2 -> files (intersect) -> evidence ->
// context (assemble) -> patch -> measure, grade. Steps with equal activity, params and inputs run once per issue, so
// the ablations pay only for what they change.
//
// Prompts are Go text/template texts; each activity documents the fields it fills: localize {{.Issue}},
// {{.Inventory}}, {{.MaxFiles}}; evidence {{.Issue}}, {{.Files}}, {{.Paths}}, {{.MaxSearches}}, {{.MaxStrings}};
// patch {{.Issue}}, {{.Context}}, {{.Format}} (the text of formats[format]).
function(ctxlab) {
  prompts:: {
    localize: {
      system: 'You are an expert software engineer who locates the source files a bug fix must change.',
      user: |||
        An issue was reported against a repository.

        <issue>
        {{.Issue}}
        </issue>

        These are paths of files in the repository (not all of them):

        <paths>
        {{.Inventory}}</paths>

        Which files must be edited to resolve the issue? Answer with at most {{.MaxFiles}} paths copied exactly from the
        list, most likely first, as a numbered list with one path per line and nothing else on the line.
      |||,
    },
    evidence: {
      system: 'You are an expert software engineer planning which code to read before fixing a bug.',
      user: |||
        <issue>
        {{.Issue}}
        </issue>

        These files will be shown in full when the fix is written:

        {{.Files}}
        What else must be read to fix the issue correctly? Plan at most {{.MaxSearches}} searches over the repository.
        Each search has a kind (definition: where a name is declared; callers: where a function is called; string: a
        message or literal; import; test) and at most {{.MaxStrings}} fixed strings to search for, matched exactly and
        case-sensitively, as `git grep -F` does. Answer with JSON only, in this shape:

        ```json
        {"searches": [{"kind": "definition", "strings": ["parseConfig"]}, {"kind": "string", "strings": ["invalid value"]}]}
        ```
      |||,
    },
    patch: {
      system: 'You are an expert software engineer. You fix bugs with small, correct edits.',
      user: |||
        <issue>
        {{.Issue}}
        </issue>

        <code>
        {{.Context}}</code>

        Write the change that resolves the issue. {{.Format}}
      |||,
      formats: {
        diff: |||
          Answer with a unified diff (as `git diff` prints it, with --- a/path and +++ b/path headers and @@ hunks whose
          context lines are copied exactly from the code above) in one ```diff fenced block.
        |||,
        search_replace: |||
          Answer with SEARCH/REPLACE blocks. Each block is the file's path on its own line, then:
          <<<<<<< SEARCH
          lines copied exactly from the file, enough to be unique
          =======
          the lines that replace them
          >>>>>>> REPLACE
        |||,
      },
    },
  },

  // Caps of step 4 in tokens (the paper's hand-set values), and the knobs of steps 1 and 3: the kinds' declared
  // defaults (specs/kind_cq2care.go), written into the spec.
  caps:: ctxlab.param_defaults('assemble', ['file_cap', 'snippet_cap', 'total_cap']),
  inventory_params:: ctxlab.param_defaults('inventory', ['ratio', 'cap']),
  evidence_params:: ctxlab.param_defaults('evidence', ['max_searches', 'max_strings', 'new_files', 'max_files']),
  // Localization samples must differ: their temperature overrides the model's (the seed is offset per sample).
  localize_params:: ctxlab.param_defaults('localize', ['max_files']) { temperature: 0.7 },

  local c = self,

  // steps(prompts, evidence): the steps between checkout and the context, F in step 'files'.
  steps(prompts=c.prompts, evidence=true)::
    [ctxlab.step('inventory', 'inventory', c.inventory_params, { checkout: 'checkout' })]
    + [
      ctxlab.step('localize%d' % i,
                  'localize',
                  c.localize_params { sample: i, prompt: prompts.localize },
                  { checkout: 'checkout', inventory: 'inventory' })
      for i in [0, 1, 2]
    ]
    + [ctxlab.step('files', 'intersect', {}, { l0: 'localize0', l1: 'localize1', l2: 'localize2' })]
    + (if evidence then [c.evidence_step(prompts)] else []),

  evidence_step(prompts=c.prompts)::
    ctxlab.step('evidence',
                'evidence',
                c.evidence_params { prompt: prompts.evidence },
                { checkout: 'checkout', files: 'files' }),

  // context(caps, evidence): the assemble step.
  context(caps=c.caps, evidence=true)::
    ctxlab.step('context',
                'assemble',
                caps,
                { checkout: 'checkout', files: 'files' } + (if evidence then { evidence: 'evidence' } else {})),

  // method(name, ...): CQ2-CARE as a whole method. format is the patch's edit format (diff or search_replace).
  method(name='cq2care', prompts=c.prompts, caps=c.caps, format='diff', evidence=true)::
    ctxlab.method(name,
                  c.context(caps, evidence),
                  c.steps(prompts, evidence),
                  patch={ format: format, prompt: prompts.patch }),

  // The paper's ablations of a CQ2-CARE method m, built from m's own steps:
  //   no_evidence(m)     without the evidence step;
  //   single_sample(m)   F = sample L0 alone (tests and docs dropped), cut to the intersection's file count;
  //   patch_resample(m)  a second patch sample on the same context.
  no_evidence(m, name=m.name + '_no_evidence')::
    m {
      name: name,
      steps: [
        if s.id == 'context' then s { inputs: { checkout: 'checkout', files: 'files' } } else s
        for s in m.steps
        if s.id != 'evidence'
      ],
    },
  single_sample(m, name=m.name + '_single_sample')::
    m {
      name: name,
      steps: std.flattenArrays([
        if s.id == 'files' then [
          s { id: 'intersection' },
          ctxlab.step('files', 'trim', {}, { sample: 'localize0', like: 'intersection' }),
        ] else [s]
        for s in m.steps
      ]),
    },
  patch_resample(m, name=m.name + '_patch_resample')::
    ctxlab.override(m, 'patch', { params+: { sample: 1 } }) + { name: name },

  ablations:: [c.no_evidence(c.methods.cq2care), c.single_sample(c.methods.cq2care), c.patch_resample(c.methods.cq2care)],

  methods: {
    cq2care: c.method(),
    cq2care_no_evidence: c.no_evidence(c.methods.cq2care),
    cq2care_single_sample: c.single_sample(c.methods.cq2care),
    cq2care_patch_resample: c.patch_resample(c.methods.cq2care),
  },
}
