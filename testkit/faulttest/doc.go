// Package faulttest holds ctxlab's crash tests: the starter binary runs a demo sweep that calls the openai provider
// against a fake endpoint (testkit/fakeopenai) counting every call, is killed with SIGKILL (embedded Temporal
// server, workers and all) at random points, and is started again until the sweep completes. The tests check what
// the issue "never pay twice, never lose a result" promises: the final results equal an uninterrupted run's, the
// paid calls exceed that run's by at most the calls in flight at the kills, and the API key reaches neither the
// run folder nor any workflow history.
//
// The package has only tests; it is its own package because the starter's end-to-end tests already take minutes.
// CTXLAB_FAULT_SEED replays a run's kill points (each test logs its seed).
package faulttest
