// Package faulttest holds ctxlab's crash tests: a demo sweep that calls the openai provider against a fake endpoint
// (testkit/fakeopenai) counting every call runs on machines that share no disk (testkit/machines): the starter's,
// whose process holds the embedded Temporal server and writes the rows, and a worker machine for every queue, the
// only one with the API key, sharing the server and a file:// store. The machines are killed with SIGKILL at random
// points, the starter's, the worker's or both, and started again until the sweep completes. The tests check what
// the issue "never pay twice, never lose a result" promises: the final results equal an uninterrupted
// single-process run's, the paid calls exceed that run's by at most the calls in flight at the kills, and the API
// key reaches neither the run folder, the store nor any workflow history.
//
// The package has only tests; it is its own package because the starter's end-to-end tests already take minutes.
// CTXLAB_FAULT_SEED replays a run's kill points (each test logs its seed).
package faulttest
