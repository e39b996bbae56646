// Package pgfault is the fault test of a cluster deployment: the Temporal server in its own process on PostgreSQL
// (`starter server`, on a private cluster testkit/pgtest starts), standalone workers for each queue (two for llm),
// and `starter run --address` submitting an openai demo sweep against a fake endpoint that counts every call. The
// server is killed with SIGKILL twice mid-sweep and started again (once at once, once after longer than the Temporal
// SDK waits for a workflow's result), and one llm worker is killed for good while it holds a model call: the sweep must complete with an uninterrupted run's rows, every model call paid once (the
// killed worker's call in flight aside), and that call's activity finished by the surviving worker.
//
// The package has only tests; it is skipped where PostgreSQL is not installed, unless CTXLAB_REQUIRE_POSTGRES=1.
package pgfault
