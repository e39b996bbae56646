// Package e2e holds the starter's end-to-end tests: each runs the starter (starter/cli's Main, in the test binary
// re-executed as the starter) over whole sweeps against its embedded Temporal server or another one, with workers in
// other processes or machines (testkit/machines), fake and real model endpoints (llama-server), Docker and
// chromium. They see the starter as a researcher does: its commands, exit codes, output and the files of the run
// folder. The package has no code of its own; the unit tests of each command are in starter/cli.
package e2e
