// Package activities holds ctxlab's Temporal activities: one file per kind (checkout, contexts, patch, measure,
// grade) plus the sweep's own bookkeeping (loading the dataset and the plan, recording rows, summarizing). They are
// thin methods on Activities, which holds their dependencies, over the pure sub-packages (repo, tokens, testrun,
// testlog, contexts, llm) and the infrastructure below activities (store/cas, runlog, dataset/swebench, patch/diff).
//
// Every DAG node activity has the same shape, func(ctx, NodeInput) (NodeOutput, error), so the Issue workflow can
// interpret any DAG a spec declares; the wrapper in node.go gives each one memoization by node key, an attempt log
// for audits, and heartbeats.
package activities
