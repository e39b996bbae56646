// Package workflows holds ctxlab's Temporal workflows: Sweep, one per experiment, which runs one Issue child per
// dataset instance with bounded concurrency, and Issue, which interprets the experiment's merged DAG for one
// instance. Workflow code here is deterministic: no map iteration decides an order, no clocks, no I/O.
package workflows
