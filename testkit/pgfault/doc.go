// Package pgfault is the fault test of a cluster deployment whose machines share no disk: the Temporal server in its
// own process on PostgreSQL (`starter server`, on a private cluster testkit/pgtest starts), standalone workers for
// each queue (two for llm) and `starter run --address --no-worker` submitting an openai demo sweep against a fake
// endpoint that counts every call, each process a machine of its own (testkit/machines) sharing only the Temporal
// server and a real S3 server (testkit/s3server) as the store. The server is killed with SIGKILL twice mid-sweep and
// started again (once at once, once after longer than the Temporal SDK waits for a workflow's result), and one llm
// worker is killed for good while it holds a model call: the sweep must complete with an uninterrupted
// single-process run's rows, row by row, every model call paid once (the killed worker's call in flight aside), and
// that call's activity finished by the surviving worker.
//
// The package has only tests; it is skipped where PostgreSQL is not installed or machines cannot be made (root and
// unshare), unless CTXLAB_REQUIRE_POSTGRES=1 and CTXLAB_REQUIRE_MACHINES=1.
package pgfault
