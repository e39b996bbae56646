package executor

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"ctxlab/dataset/swebench"
)

// Needs is what grading an instance needs of the machine, as far as it is known before a checkout: its language
// (LangGo, LangPython; empty when not known yet) and, for Go, whether its module requirements are downloaded first
// (a non-empty go.sum).
type Needs struct {
	Lang     string
	Repo     string
	Requires bool
}

// ProbeLocal says whether this machine can run an instance's tests with the local executor under cfg, before any
// grading: nil, or an error naming what is missing and the fix. It runs the checks the grader's own steps would
// fail at: the interpreter and runner module of Python tests (the test command's program, or a python3 that
// imports pytest), the go command, and the module proxy requirements are downloaded from. cfg.GoProxy has its
// {dataset_dir} replaced already.
func ProbeLocal(ctx context.Context, cfg Config, n Needs) error {
	switch n.Lang {
	case LangGo:
		if cmd := cfg.TestCmdFor(n.Repo, LangGo); cmd != "" {
			return probeCommand(ctx, cmd)
		}
		if _, err := exec.LookPath("go"); err != nil {
			return fmt.Errorf("no go command on PATH to run the Go tests with: install Go (https://go.dev/dl) or " +
				"put its bin folder on PATH")
		}
		if n.Requires {
			return probeGoProxy(ctx, cfg.GoProxy)
		}
		return nil
	case LangPython:
		if cmd := cfg.TestCmdFor(n.Repo, LangPython); cmd != "" {
			return probeCommand(ctx, cmd)
		}
		py, err := FindPython(cfg.Python, "pytest")
		if err != nil {
			return err
		}
		if cfg.Python != "" { // FindPython takes a configured interpreter at its word
			return probeImport(ctx, py, "pytest", "grading.python")
		}
		return nil
	}
	return nil
}

// probeCommand checks a test command's program, and for `PYTHON -m MODULE ...` that the interpreter imports MODULE.
func probeCommand(ctx context.Context, cmd string) error {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return nil
	}
	path, err := exec.LookPath(f[0])
	if err != nil {
		return fmt.Errorf("test command %q: %s is not on PATH: install it, or change grading.test_cmd", cmd, f[0])
	}
	if len(f) >= 3 && f[1] == "-m" && strings.HasPrefix(filepath.Base(f[0]), "python") {
		return probeImport(ctx, path, f[2], "grading.test_cmd")
	}
	return nil
}

// probeImport checks that interpreter py imports module.
func probeImport(ctx context.Context, py, module, setting string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, py, "-c", "import "+module).CombinedOutput(); err != nil {
		return fmt.Errorf("%s (%s) cannot import %s: install python3-%s, or change %s: %s", py, setting, module,
			module, setting, lastLine(string(out)))
	}
	return nil
}

// probeGoProxy checks the module proxy a Go module's requirements are downloaded from before the offline build:
// the grading's, else the worker's GOPROXY. The first entry of the list is probed: a file:// folder must exist, an
// http(s) proxy must answer. Its URL is not repeated (it may carry credentials), only its scheme and host.
func probeGoProxy(ctx context.Context, proxy string) error {
	setting := "grading.goproxy"
	if proxy == "" {
		setting = "GOPROXY"
		proxy = os.Getenv("GOPROXY")
		if proxy == "" {
			if out, err := exec.CommandContext(ctx, "go", "env", "GOPROXY").Output(); err == nil {
				proxy = strings.TrimSpace(string(out))
			}
		}
	}
	entries := strings.FieldsFunc(proxy, func(r rune) bool { return r == ',' || r == '|' })
	if len(entries) == 0 || entries[0] == "off" || entries[0] == "direct" {
		// The grader downloads through a proxy only (no version control: GOVCS=*:off).
		return fmt.Errorf("the module requirements cannot be downloaded: %s names no proxy; set grading.goproxy "+
			"(a proxy URL or file:///folder)", setting)
	}
	first := entries[0]
	u, err := url.Parse(first)
	if err != nil {
		return fmt.Errorf("%s is not a URL list", setting)
	}
	switch u.Scheme {
	case "file":
		if fi, err := os.Stat(u.Path); err != nil || !fi.IsDir() {
			return fmt.Errorf("the module proxy folder of %s (%s) does not exist: make it, or change %s", setting,
				u.Path, setting)
		}
	case "http", "https":
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, first, nil)
		if err != nil {
			return fmt.Errorf("%s: %v", setting, err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("the module proxy of %s (%s://%s) does not answer: the module requirements cannot be "+
				"downloaded; set grading.goproxy to a proxy this machine reaches", setting, u.Scheme, u.Host)
		}
		resp.Body.Close()
	}
	return nil
}

// ProbeDocker checks that the docker CLI and a running engine answer, and returns the images the engine holds
// (as repository:tag), for ProbeImage.
func ProbeDocker(ctx context.Context, cfg Config) (map[string]bool, error) {
	bin := cfg.Docker
	if bin == "" {
		bin = "docker"
	}
	if _, err := exec.LookPath(bin); err != nil {
		return nil, fmt.Errorf("the docker executor needs the docker CLI (%s is not on PATH): apt-get install -y "+
			"docker.io, or set grading.docker", bin)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = dockerEnv()
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("version", "--format", "{{.Server.Version}}"); err != nil {
		return nil, fmt.Errorf("no Docker engine answers (docker version: %s): start one (dockerd, or systemctl "+
			"start docker)", lastLine(out))
	}
	out, err := run("image", "ls", "--format", "{{.Repository}}:{{.Tag}}")
	if err != nil {
		return nil, fmt.Errorf("docker image ls: %s", lastLine(out))
	}
	images := map[string]bool{}
	for _, l := range strings.Fields(out) {
		images[l] = true
	}
	return images, nil
}

// ProbeImage says whether an instance's image is among the engine's images (ProbeDocker), naming the fix if not.
func ProbeImage(cfg Config, in swebench.Instance, images map[string]bool) error {
	image := ImageOf(cfg.Namespace, in)
	if images[image] {
		return nil
	}
	return fmt.Errorf("image %s is not on this machine: starter images pull --spec SPEC (or --dataset FILE, or docker "+
		"pull %s), or for a dataset that publishes no images starter images build --spec SPEC (or --dataset FILE)",
		image, image)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
