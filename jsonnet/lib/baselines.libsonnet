// baselines.libsonnet: retrieval, compression and corruption baselines (PAPER.md). A function of ctxlab.libsonnet.
function(ctxlab) {
  methods: {},
}
