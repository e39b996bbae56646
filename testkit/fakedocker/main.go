// Command fakedocker stands in for the docker CLI in tests of the docker grading executor; no Docker engine runs on
// the machines that test ctxlab. It records every invocation (arguments and the names of its environment variables)
// as a JSON line, keeps a "container" as a folder on disk (so docker cp in and out really copies files), and answers
// `exec NAME /bin/bash /eval.sh` by replaying a recorded log. Its settings come from a JSON file next to the
// program (PROGRAM.json), since the executor passes the docker CLI an allowlisted environment only.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Config is read from PROGRAM.json.
type Config struct {
	// Log receives one JSON line per invocation.
	Log string `json:"log"`
	// Root is the container's file system: container path /x is Root/x.
	Root string `json:"root"`
	// Replay is printed on stderr (the eval script's log) and Channel on stdout (its results channel) for `exec
	// NAME /bin/bash /eval.sh` once /eval.sh exists in Root.
	Replay  string `json:"replay"`
	Channel string `json:"channel"`
	// Hang makes the eval script print its start and then sleep for an hour.
	Hang bool `json:"hang"`
	// FailCreate makes `create` fail as a missing image would.
	FailCreate bool `json:"fail_create"`
}

// Call is one recorded invocation.
type Call struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	cfg, err := loadConfig()
	if err != nil {
		return fail("%v", err)
	}
	recordCall(cfg.Log, args)
	if len(args) == 0 {
		return fail("usage: docker COMMAND")
	}
	switch args[0] {
	case "create":
		if cfg.FailCreate {
			return fail("Unable to find image '%s' locally", args[len(args)-4])
		}
		fmt.Println("f4ke0000c0nta1ner")
	case "image":
		// image inspect: the image is present unless creating is configured to fail.
		if cfg.FailCreate {
			return fail("Error: No such image: %s", args[len(args)-1])
		}
		fmt.Println("sha256:f4ke")
	case "ps":
		// No containers of dead graders.
	case "start", "rm", "kill":
		fmt.Println(args[len(args)-1])
	case "cp":
		return copyCmd(cfg, args)
	case "exec":
		return execCmd(cfg, args)
	default:
		return fail("fakedocker: %s is not faked", args[0])
	}
	return 0
}

// loadConfig reads PROGRAM.json next to the running program.
func loadConfig() (Config, error) {
	var cfg Config
	self, err := os.Executable()
	if err != nil {
		return cfg, err
	}
	b, err := os.ReadFile(self + ".json")
	if err != nil {
		return cfg, fmt.Errorf("fakedocker: config: %v", err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("fakedocker: config: %v", err)
	}
	return cfg, nil
}

// recordCall appends the invocation's arguments and sorted environment variable names to the log, best effort.
func recordCall(log string, args []string) {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		env = append(env, k)
	}
	sort.Strings(env)
	if line, err := json.Marshal(Call{Args: args, Env: env}); err == nil {
		if f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			_, _ = f.Write(append(line, '\n'))
			f.Close()
		}
	}
}

// inside maps container path p to its place under the container's root folder.
func (cfg Config) inside(p string) string { return filepath.Join(cfg.Root, filepath.FromSlash(p)) }

// copyCmd fakes `docker cp SRC DST`, where either side may be CONTAINER:PATH.
func copyCmd(cfg Config, args []string) int {
	if len(args) != 3 {
		return fail("docker cp: want SRC DST")
	}
	src, dst := args[1], args[2]
	if _, p, ok := strings.Cut(src, ":"); ok && !filepath.IsAbs(src) {
		src = cfg.inside(p)
	}
	if _, p, ok := strings.Cut(dst, ":"); ok && !filepath.IsAbs(dst) {
		dst = cfg.inside(p)
	}
	if err := copyFile(src, dst); err != nil {
		return fail("Error: Could not find the file %s: %v", args[1], err)
	}
	return 0
}

// execCmd fakes `docker exec NAME COMMAND...` for the few commands the executor runs.
func execCmd(cfg Config, args []string) int {
	if len(args) < 3 {
		return fail("docker exec: want NAME COMMAND")
	}
	cmd := args[2:]
	switch cmd[0] {
	case "rm":
		_ = os.Remove(cfg.inside(cmd[len(cmd)-1]))
	case "test":
		if _, err := os.Stat(cfg.inside(cmd[len(cmd)-1])); err != nil {
			return 1
		}
	case "mkdir":
		if err := os.MkdirAll(cfg.inside(cmd[len(cmd)-1]), 0o755); err != nil {
			return fail("%v", err)
		}
	case "/bin/bash":
		return runEvalScript(cfg, cmd[1])
	default:
		return fail("fakedocker: exec %s is not faked", cmd[0])
	}
	return 0
}

// runEvalScript answers `exec NAME /bin/bash SCRIPT` by replaying the recorded log (or hanging, if configured).
func runEvalScript(cfg Config, script string) int {
	if _, err := os.Stat(cfg.inside(script)); err != nil {
		return fail("bash: %s: No such file or directory", script)
	}
	if cfg.Hang {
		fmt.Fprintln(os.Stderr, "+ : '>>>>> Start Test Output'")
		time.Sleep(time.Hour)
	}
	for file, w := range map[string]io.Writer{cfg.Replay: os.Stderr, cfg.Channel: os.Stdout} {
		if file == "" {
			continue
		}
		f, err := os.Open(file)
		if err != nil {
			return fail("%v", err)
		}
		_, _ = io.Copy(w, f)
		f.Close()
	}
	return 0
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		dst = filepath.Join(dst, filepath.Base(src))
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	return 1
}
