// Package activities holds ctxlab's Temporal activities: the activity of every declared kind, each the kind's step
// (package steps, which imports no Temporal) run by one adapter, plus the agent's turn activities and the sweep's
// own bookkeeping (loading the dataset and the plan, recording rows, summarizing). Activities holds their
// dependencies (the runs folder, content stores, caches) and gives each step what it may use as a steps.Env.
//
// Every DAG node activity has the same shape, func(ctx, api.NodeInput) (api.NodeOutput, error), so the Issue
// workflow can interpret any DAG a spec declares; the adapter in node.go gives each one memoization by node key, an
// attempt log for audits, heartbeats, panic capture and the params and row-field checks, and errclass.go turns a
// step's failure into the application error Temporal records, in one place.
package activities
