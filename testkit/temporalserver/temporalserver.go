// Package temporalserver runs the upstream Temporal server for tests: the server's own main
// (go.temporal.io/server/cmd/server, the program Temporal's release images run), at the version ctxlab's go.mod
// requires, built by testkit/goinstall into the machine's cache folder and never linked into a ctxlab binary. It
// runs on a SQLite file through the server's sqlite plugin, which creates its schema (connectAttributes setup), from
// a config file written here with loopback ports, and the namespace is registered through the API, as `temporal
// operator namespace create` does: what the embedded server and `starter server` do for themselves is done here the
// way an operator of a stock server does it.
package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"golang.org/x/mod/modfile"
	"google.golang.org/protobuf/types/known/durationpb"

	"ctxlab/testkit/e2e"
	"ctxlab/testkit/goinstall"
)

// Module is the Temporal server's module and Program its main package.
const (
	Module  = "go.temporal.io/server"
	Program = Module + "/cmd/server"
)

// Version is the server's version that ctxlab's go.mod requires (the one the embedded server links).
func Version(t testing.TB) string {
	t.Helper()
	path := filepath.Join(e2e.RepoRoot(t), "go.mod")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(path, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == Module {
			return r.Mod.Version
		}
	}
	t.Fatalf("%s requires no %s", path, Module)
	return ""
}

// Build starts building the server in the background, for a test whose Start comes later: a first build on a
// machine takes minutes (the module is large), which the test's other steps can overlap.
func Build(t testing.TB) {
	t.Helper()
	version := Version(t)
	go func() { _, _ = binary(version) }()
}

func binary(version string) (string, error) {
	return goinstall.Binary(Program, version, "temporal-server")
}

// Server is a running upstream server.
type Server struct {
	// Address is its frontend's HOST:PORT.
	Address string
	// Namespace is the namespace registered in it.
	Namespace string
	// Version is the server's version.
	Version string
	// Log is its output.
	Log *e2e.SyncBuffer
	cmd *exec.Cmd
}

// ports are the server's: each service's gRPC and membership ports, and the frontend's HTTP port.
type ports struct {
	Frontend, FrontendHTTP, History, Matching, Worker   int
	FrontendRing, HistoryRing, MatchingRing, WorkerRing int
	DB                                                  string
}

// configTemplate is the server's configuration: one SQLite file for both stores (the sqlite plugin sets up both
// schemas in it), every service on loopback, no metrics, pprof or archival listener.
var configTemplate = template.Must(template.New("config").Parse(`log:
  stdout: true
  level: warn
persistence:
  defaultStore: sqlite-default
  visibilityStore: sqlite-visibility
  numHistoryShards: 4
  datastores:
    sqlite-default:
      sql:
        pluginName: sqlite
        databaseName: "{{.DB}}"
        connectAddr: localhost
        connectProtocol: tcp
        connectAttributes: {mode: rwc, setup: "true", journal_mode: wal, synchronous: "2"}
        maxConns: 1
        maxIdleConns: 1
    sqlite-visibility:
      sql:
        pluginName: sqlite
        databaseName: "{{.DB}}"
        connectAddr: localhost
        connectProtocol: tcp
        connectAttributes: {mode: rwc, setup: "true", journal_mode: wal, synchronous: "2"}
        maxConns: 1
        maxIdleConns: 1
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
  frontend:
    rpc: {grpcPort: {{.Frontend}}, membershipPort: {{.FrontendRing}}, bindOnLocalHost: true, httpPort: {{.FrontendHTTP}}}
  history:
    rpc: {grpcPort: {{.History}}, membershipPort: {{.HistoryRing}}, bindOnLocalHost: true}
  matching:
    rpc: {grpcPort: {{.Matching}}, membershipPort: {{.MatchingRing}}, bindOnLocalHost: true}
  worker:
    rpc: {grpcPort: {{.Worker}}, membershipPort: {{.WorkerRing}}, bindOnLocalHost: true}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:{{.Frontend}}
      httpAddress: 127.0.0.1:{{.FrontendHTTP}}
dcRedirectionPolicy:
  policy: noop
`))

// Start builds (once per machine) and starts the server on a new SQLite file, registers namespace in it and waits
// until a namespace call succeeds; it stops the server when the test ends.
func Start(t testing.TB, namespace string) *Server {
	t.Helper()
	version := Version(t)
	exe, err := binary(version)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := freePorts(9)
	if err != nil {
		t.Fatal(err)
	}
	pt := ports{Frontend: p[0], FrontendHTTP: p[1], History: p[2], Matching: p[3], Worker: p[4], FrontendRing: p[5],
		HistoryRing: p[6], MatchingRing: p[7], WorkerRing: p[8], DB: filepath.Join(dir, "temporal.db")}
	var cfg strings.Builder
	if err := configTemplate.Execute(&cfg, pt); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Server{Address: net.JoinHostPort("127.0.0.1", strconv.Itoa(pt.Frontend)), Namespace: namespace,
		Version: version, Log: &e2e.SyncBuffer{}}
	s.cmd = exec.Command(exe, "--config-file", cfgFile, "--allow-no-auth", "start")
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.Log, s.Log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("--- temporal server %s output (last 4000 bytes):\n%s", version, e2e.Tail(s.Log.String(), 4000))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.register(ctx, exited); err != nil {
		t.Fatalf("temporal server %s: %v\n%s", version, err, e2e.Tail(s.Log.String(), 4000))
	}
	return s
}

// register registers the namespace once the frontend answers, then waits until the frontend serves it (its
// namespace registry refreshes every few seconds).
func (s *Server) register(ctx context.Context, exited <-chan error) error {
	var (
		c   client.NamespaceClient
		err error
	)
	wait := func() error {
		select {
		case err := <-exited:
			return fmt.Errorf("exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
			return nil
		}
	}
	for {
		if c, err = client.NewNamespaceClient(client.Options{HostPort: s.Address}); err == nil {
			break
		}
		if werr := wait(); werr != nil {
			return fmt.Errorf("%w (last dial: %v)", werr, err)
		}
	}
	defer c.Close()
	for {
		err = c.Register(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: s.Namespace,
			WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
		var exists *serviceerror.NamespaceAlreadyExists
		if err == nil || errors.As(err, &exists) {
			break
		}
		if werr := wait(); werr != nil {
			return fmt.Errorf("registering namespace %s: %w (last: %v)", s.Namespace, werr, err)
		}
	}
	wc, err := client.Dial(client.Options{HostPort: s.Address, Namespace: s.Namespace})
	if err != nil {
		return err
	}
	defer wc.Close()
	info, err := wc.WorkflowService().GetSystemInfo(ctx, &workflowservice.GetSystemInfoRequest{})
	if err != nil {
		return err
	}
	if got := info.GetServerVersion(); "v"+got != s.Version {
		return fmt.Errorf("the server says it is version %s, not %s", got, s.Version)
	}
	for {
		_, err = wc.ListOpenWorkflow(ctx, &workflowservice.ListOpenWorkflowExecutionsRequest{
			Namespace: s.Namespace, MaximumPageSize: 1})
		if err == nil {
			return nil
		}
		if werr := wait(); werr != nil {
			return fmt.Errorf("namespace %s not served: %w (last: %v)", s.Namespace, werr, err)
		}
	}
}

// freePorts returns n different free loopback ports.
func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		p, err := e2e.FreePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}
