// Command dotenv prints the variables of .env files, or runs a command with them set.
//
//	dotenv [-f FILE]... print
//	dotenv [-f FILE]... run COMMAND [ARG]...
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	"example.com/dotenv"
)

type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	var files fileList
	flag.Var(&files, "f", "a .env file to read (repeatable; default .env)")
	flag.Parse()
	if len(files) == 0 {
		files = fileList{".env"}
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: dotenv [-f FILE]... print | run COMMAND [ARG]...")
		os.Exit(2)
	}
	all := map[string]string{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		vars, err := dotenv.Parse(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
		for k, v := range dotenv.ExpandAll(vars) {
			all[k] = v
		}
	}
	switch flag.Arg(0) {
	case "print":
		keys := make([]string, 0, len(all))
		for k := range all {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Printf("%s=%q\n", k, all[k])
		}
	case "run":
		if flag.NArg() < 2 {
			fmt.Fprintln(os.Stderr, "dotenv run: no command")
			os.Exit(2)
		}
		cmd := exec.Command(flag.Arg(1), flag.Args()[2:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = os.Environ()
		for k, v := range all {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "dotenv: unknown command %q\n", flag.Arg(0))
		os.Exit(2)
	}
}
