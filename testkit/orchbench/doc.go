// Package orchbench measures what Temporal costs ctxlab: a generated sweep (many issues, many methods, the offline
// model, no grading) runs once on the embedded Temporal server with the real workers and once as the same DAGs on
// plain goroutines, in the same process, and the benchmark reports activities per second, the overhead per
// activity and peak memory of each. The code is in orchbench_test.go; see the README's "Running on a cluster".
package orchbench
