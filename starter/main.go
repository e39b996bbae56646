// Command starter is the researcher's CLI: run a sweep from a Jsonnet spec, compile a spec, and more. See README.md.
package main

import (
	"fmt"
	"os"

	"ctxlab/grading/sandbox"
	"ctxlab/starter/cli"
)

func main() {
	// Same-user processes (graded tests among them) must not read the API keys in our environment. Importing
	// sandbox also makes this program its own sandbox init (see the package comment).
	if err := sandbox.NonDumpable(); err != nil {
		fmt.Fprintln(os.Stderr, "starter: warning:", err)
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
