// Package llamaserver starts real llama.cpp servers for tests: Debian unstable's llama-server (package
// llama.cpp-tools, run from a debootstrap folder made once per machine in ctxlab's cache folder) on loopback, serving
// the real 260K-parameter model stories260K.gguf. The model writes children's stories and follows no instruction;
// it exercises the real protocol of a real OpenAI-compatible server (real usage counts, real context-size errors,
// real latency), never a method.
//
// The model file is part of the repository (testdata/stories260K.gguf, with its provenance and licence beside it)
// and compiled into the test binaries that use this package, so a test finds it from any clone and any working
// folder; $CTXLAB_LLAMA_MODEL names another copy. Either is checked against its SHA-256. Plain `go test` skips a test
// when debootstrap or root (chroot) is missing; scripts/test sets CTXLAB_REQUIRE_LLAMA=1, and then it fails, naming
// what is missing.
package llamaserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ctxlab/internal/images"
	"ctxlab/runfolder"
	"ctxlab/testkit/e2e"
)

// Facts of the model file.
const (
	ModelFile   = "stories260K.gguf"
	ModelSHA256 = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"
	// ModelID is the name the servers serve it under (llama-server's alias, -a): the model id of the spec.
	ModelID = "stories260K"
)

// Environment variables of the kit.
const (
	// ModelEnv names a model file to use instead of the repository's copy.
	ModelEnv = "CTXLAB_LLAMA_MODEL"
	// RequireEnv turns a missing model, debootstrap or root from a skip into a failure (scripts/test sets it).
	RequireEnv = "CTXLAB_REQUIRE_LLAMA"
)

// Suite and Packages make the server's folder: llama.cpp-tools is in Debian unstable only.
const Suite = "sid"

// Packages are installed into the folder beside minbase.
var Packages = []string{"llama.cpp-tools"}

// client bounds every request the kit makes of a server: one that hangs fails its test, naming the request.
var client = &http.Client{Timeout: time.Minute}

// serverPath is llama-server inside the folder.
const serverPath = "/usr/bin/llama-server"

// repoModel is the repository's copy of the model (1.2 MB).
//
//go:embed testdata/stories260K.gguf
var repoModel []byte

// Model returns the model's bytes: the file $CTXLAB_LLAMA_MODEL names, else the repository's copy. Either must have
// the model's SHA-256.
func Model() ([]byte, error) {
	b, from := repoModel, "the repository's testdata/"+ModelFile
	if path := os.Getenv(ModelEnv); path != "" {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("the real test model (%s): %w", ModelEnv, err)
		}
		from = path
	}
	if sum := sha256Hex(b); sum != ModelSHA256 {
		return nil, fmt.Errorf("%s has SHA-256 %s, not %s's %s", from, sum, ModelFile, ModelSHA256)
	}
	return b, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// Root returns the debootstrap folder holding llama-server, making it when missing (about a minute and 300 MB,
// from Debian's mirror; once per machine, shared by concurrent test processes).
func Root(ctx context.Context, log io.Writer) (string, error) {
	return images.Debootstrap(ctx, log, Suite, Packages, strings.TrimPrefix(serverPath, "/"))
}

// Options of a server.
type Options struct {
	// Context is the context size in tokens (-c; default 4096, as a user would start it).
	Context int
	// Embeddings serves /v1/embeddings (--embeddings --pooling mean) instead of completions.
	Embeddings bool
	// Slots is the number of parallel slots (-np; default llama-server's, 4). Each gets Context/Slots tokens, at
	// most the model's training context (2048 for stories260K).
	Slots int
	// Batch is the logical and physical batch size (-b, -ub; default llama-server's, 2048 and 512). An embeddings
	// server refuses an input longer than its physical batch with HTTP 500 "input (N tokens) is too large to
	// process. increase the physical batch size".
	Batch int
}

// Server is a running llama-server.
type Server struct {
	// URL is its base, http://127.0.0.1:PORT (the OpenAI API is under URL+"/v1").
	URL  string
	log  *e2e.SyncBuffer // the server's output
	cmd  *exec.Cmd
	opts Options
	done chan struct{}
}

// Output is what the server has printed so far.
func (s *Server) Output() string { return s.log.String() }

// Require returns the model and the server's folder (making it once), or ends the test: a skip, or under
// CTXLAB_REQUIRE_LLAMA=1 a failure naming what is missing and how to provide it.
func Require(t testing.TB) (model []byte, root string) {
	t.Helper()
	missing := func(msg string) {
		t.Helper()
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + " (scripts/test sets " + RequireEnv + "=1, which makes this a failure)")
	}
	model, err := Model()
	if err != nil {
		missing(err.Error())
	}
	if os.Geteuid() != 0 {
		missing("llama-server runs in a Debian unstable folder through chroot, which needs root")
	}
	if _, err := exec.LookPath("debootstrap"); err != nil && !fileExists(filepath.Join(rootGuess(), serverPath)) {
		missing("debootstrap is needed to make llama-server's Debian unstable folder: apt-get install -y " +
			"debootstrap (scripts/test installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	root, err = Root(ctx, logWriter{t})
	if err != nil {
		t.Fatalf("llama-server's folder: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Logf("llama-server's folder %s made in %s", root, d.Round(time.Second))
	}
	return model, root
}

// rootGuess is where Root keeps the folder, without making it (empty when the cache folder is unknown).
func rootGuess() string {
	dir, _ := images.DebootstrapDir(Suite, Packages)
	return dir
}

// Start starts a llama-server serving the model (Require) and waits until it is healthy (Launch); it stops it when
// the test ends, and fails the test, with the server's output, when it does not come up.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	model, root := Require(t)
	s, err := Launch(root, model, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	t.Logf("llama-server %s: context %d, embeddings %v", s.URL, s.opts.Context, o.Embeddings)
	return s
}

// Launch starts a llama-server from the folder root (Root) serving the model (Model) on a free loopback port, and
// waits until /health answers 200 (at most two minutes). The caller stops it.
func Launch(root string, model []byte, o Options) (*Server, error) {
	inRoot, err := placeModel(root, model)
	if err != nil {
		return nil, err
	}
	if o.Context == 0 {
		o.Context = 4096
	}
	// A port chosen free can be taken before the server binds it: try another.
	for try := 0; ; try++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := start(root, inRoot, port, o)
		if err != nil {
			return nil, err
		}
		err = s.waitHealthy(2 * time.Minute)
		if err == nil {
			return s, nil
		}
		s.Stop()
		if try == 2 || !strings.Contains(s.log.String(), "bind") {
			return nil, fmt.Errorf("llama-server (%+v): %v\n%s", o, err, tail(s.log.String(), 3000))
		}
	}
}

// placeModel copies the model into the folder under a name keyed by its content, once, and returns its path there.
func placeModel(root string, model []byte) (string, error) {
	rel := filepath.Join("models", ModelSHA256[:16]+".gguf")
	dst := filepath.Join(root, rel)
	if b, err := os.ReadFile(dst); err == nil && sha256Hex(b) == ModelSHA256 {
		return "/" + rel, nil
	}
	// A temporary file of its own (and the folder made): the tests of one process place the model at once.
	return "/" + rel, runfolder.WriteAtomic(dst, model)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func start(root, model string, port int, o Options) (*Server, error) {
	// One thread: on a 2-core machine two make generation a hundred times slower (../shared/models/README.md).
	args := []string{"-m", model, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "-t", "1",
		"-c", strconv.Itoa(o.Context), "-a", ModelID, "--no-webui"}
	if o.Embeddings {
		args = append(args, "--embeddings", "--pooling", "mean")
	}
	if o.Slots > 0 {
		args = append(args, "-np", strconv.Itoa(o.Slots))
	}
	if o.Batch > 0 {
		args = append(args, "-b", strconv.Itoa(o.Batch), "-ub", strconv.Itoa(o.Batch))
	}
	cmd := exec.Command(serverPath, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/root", "LLAMA_ARG_THREADS=1"}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), log: &e2e.SyncBuffer{}, cmd: cmd, opts: o,
		done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	// Pdeathsig follows the thread that started the server: that thread stays locked to the goroutine that waits
	// for it, so the server dies with the test process, and only then.
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(s.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting llama-server in %s: %w", root, err)
	}
	return s, nil
}

// waitHealthy polls /health until it answers 200 (llama-server answers 503 while it loads the model).
func (s *Server) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return errors.New("llama-server exited before it was healthy")
		default:
		}
		resp, err := client.Get(s.URL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("llama-server did not answer /health with 200 within %s", timeout)
}

// Stop ends the server (SIGTERM, then SIGKILL after five seconds) and waits for it.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

// Props is what the server's /props says of itself.
type Props struct {
	// Context is each slot's context size (default_generation_settings.n_ctx).
	Context int
	// Slots is the number of parallel slots (total_slots).
	Slots int
}

// Props reads GET /props.
func (s *Server) Props() (Props, error) {
	var raw struct {
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		TotalSlots int `json:"total_slots"`
	}
	if err := s.getJSON("/props", &raw); err != nil {
		return Props{}, err
	}
	return Props{Context: raw.Settings.NCtx, Slots: raw.TotalSlots}, nil
}

// Tokenize counts the model's tokens of a text (POST /tokenize), as the server counts a prompt.
func (s *Server) Tokenize(text string) (int, error) {
	body, _ := json.Marshal(map[string]any{"content": text})
	resp, err := client.Post(s.URL+"/tokenize", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, fmt.Errorf("/tokenize: %w", err)
	}
	return len(out.Tokens), nil
}

func (s *Server) getJSON(path string, v any) error {
	resp, err := client.Get(s.URL + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
