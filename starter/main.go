// Command starter is the researcher's CLI: run a sweep from a Jsonnet spec, compile a spec, and more. See README.md.
package main

import (
	"os"

	"ctxlab/starter/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
