// cq2care.libsonnet: CQ2-CARE (PAPER.md, Algorithm 1), its prompts and its ablations. A function of ctxlab.libsonnet.
function(ctxlab) {
  methods: {},
}
