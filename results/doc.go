// Package results is the results store of a run (one JSON row per instance, method and model in results.jsonl) and
// what is computed from it: per-method summaries and the summary.md table. Every number it prints comes from the
// stored rows.
package results
