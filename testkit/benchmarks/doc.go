// Package benchmarks measures the CPU work of context selection on a repository of SWE-bench's average size
// (testkit/synthrepo: 3,010 files, 438K lines): path ranking for the inventory, tokenization, BM25 index and query,
// fixed-string grep and budget fitting. Each benchmark reports x_read, its time per operation divided by the time
// to read the same bytes from disk once, measured in the same run, so numbers compare across machines:
//
//	go test -run '^$' -bench . -benchtime 3x ./testkit/benchmarks/
//
// paper_test.go runs, over the same repository, one issue of specs/paper.jsonnet's methods that need no external
// service under two offline models, step by step (BenchmarkPaperIssue), and, asked for with -paper.issues N, a
// whole `starter run` of such issues over N generated repositories to measure its peak memory
// (BenchmarkPaperSweepMemory); docs/benchmarks.md ("Paper scale") has their numbers.
package benchmarks
