// Package embedded runs a single-process Temporal server backed by a SQLite file, so that a sweep needs no server
// installed and survives being killed: the database lives in the run folder and a restart continues from it.
//
// It is the only package of ctxlab that imports go.temporal.io/server; linking it makes binaries large and slow to
// build, so everything else stays free of it.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"

	"ctxlab/internal/buildid"
	"ctxlab/internal/regularfile"
)

// Options configure an embedded server.
type Options struct {
	// DBFile is the SQLite database; its schema is created only when the file does not exist yet (or its creation
	// was cut short: see Start).
	DBFile string
	// LogFile receives the server's own logs (they are too noisy for a console).
	LogFile string
	// Namespace is created when missing.
	Namespace string
	// Ports, when non-zero, are the frontend, history, matching and worker gRPC ports. Zero picks free ports.
	Ports Ports
	// DynamicConfig overrides server defaults (history size limits in tests, for example).
	DynamicConfig dynamicconfig.StaticClient
	// Journal is how the SQLite file commits; empty means JournalWAL.
	Journal Journal
}

// Journal is how SQLite makes a transaction durable (docs/development.md, "The embedded server's database").
type Journal string

const (
	// JournalWAL appends to a write-ahead log and syncs it at checkpoints (synchronous=NORMAL): a committed
	// transaction survives a killed process; a power loss or OS crash may lose the last ones (never corrupt the
	// file), which node memos and the response ledger make harmless (the lost steps run again, nothing is paid
	// twice).
	JournalWAL Journal = "wal"
	// JournalWALFull syncs the write-ahead log at every commit (synchronous=FULL): a power loss loses nothing
	// committed.
	JournalWALFull Journal = "wal-full"
	// JournalRollback is SQLite's default rollback journal, synced at every commit: the baseline the orchestration
	// benchmark (testkit/orchbench) measures the WAL modes against.
	JournalRollback Journal = "rollback"
)

// connectAttributes are the SQLite connection settings of a journal; the server's plugin turns every key it does
// not know as a URI parameter into a PRAGMA of that name.
func (j Journal) connectAttributes() (map[string]string, error) {
	attrs := map[string]string{"mode": "rwc"}
	switch j {
	case "", JournalWAL:
		attrs["journal_mode"], attrs["synchronous"] = "wal", "NORMAL"
	case JournalWALFull:
		attrs["journal_mode"], attrs["synchronous"] = "wal", "FULL"
	case JournalRollback:
	default:
		return nil, fmt.Errorf("embedded temporal: unknown journal %q (want %s, %s or %s)", j, JournalWAL,
			JournalWALFull, JournalRollback)
	}
	return attrs, nil
}

// Ports of the services of one embedded server (no HTTP API: see access.go).
type Ports struct {
	Frontend, History, Matching, Worker int
}

// Server is a running embedded Temporal server.
type Server struct {
	srv   temporal.Server
	host  string
	ports Ports
	ns    string
}

const host = "127.0.0.1"

// portsChosen, when set (by tests), is called between choosing the ports and binding them: the window in which
// another process can take one.
var portsChosen func(Ports)

// portTries bounds how often Start picks fresh ports after one it picked was taken before the server bound it.
const portTries = 5

// Start creates the schema and namespace if needed and starts every service. It returns once the frontend answers.
// A port taken by another process between being chosen and being bound makes it try again on fresh ports.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if err := os.MkdirAll(filepath.Dir(o.DBFile), 0o755); err != nil {
		return nil, fmt.Errorf("embedded temporal: %w", err)
	}
	// SQLite and the server's log open their files by name, following links: a run folder's link would have them
	// write wherever it points.
	for _, f := range []string{o.DBFile, o.DBFile + "-wal", o.DBFile + "-shm", o.DBFile + "-journal", o.LogFile} {
		if err := regularfile.CheckOrAbsent(f); f != "" && err != nil {
			return nil, fmt.Errorf("embedded temporal: %w", err)
		}
	}
	attrs, err := o.Journal.connectAttributes()
	if err != nil {
		return nil, err
	}
	sqlCfg := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: o.DBFile, ConnectAttributes: attrs}
	if err := createDatabase(sqlCfg, o, clusterName); err != nil {
		return nil, asDamaged(o.DBFile, err)
	}
	l := launch{
		persistence: config.Persistence{
			DefaultStore:     sqliteplugin.PluginName,
			VisibilityStore:  sqliteplugin.PluginName,
			NumHistoryShards: 1,
			DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
		},
		host: host, database: o.DBFile, logFile: o.LogFile, namespace: o.Namespace, dc: o.DynamicConfig,
		sameUserOnly: true,
	}
	srv, err := l.start(ctx, o.Ports, false)
	return srv, asDamaged(o.DBFile, err)
}

// clusterName names the single cluster every server here runs.
const clusterName = "active"

// launch is what starting a server needs besides its ports: its persistence, the address its services bind, and
// what its messages name.
type launch struct {
	persistence config.Persistence
	host        string
	database    string // the database, as messages name it (no password)
	logFile     string
	namespace   string
	dc          dynamicconfig.StaticClient
	// sameUserOnly refuses frontend calls from other uids (sameUserAuthorizer): the run folder's server. A
	// deployment's server (StartPostgres) answers workers of other machines.
	sameUserOnly bool
}

// start starts the server on the ports asked for (zero ones are picked), trying fresh ports when one it picked is
// taken before the server binds it. With fixedFrontend the frontend port is the one asked for or none: clients
// know it.
func (l launch) start(ctx context.Context, want Ports, fixedFrontend bool) (*Server, error) {
	logger, err := fileLogger(l.logFile)
	if err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		ports, err := want.fill(l.host)
		if err != nil {
			return nil, fmt.Errorf("embedded temporal: choosing ports: %w", err)
		}
		if fixedFrontend && ports.Frontend != want.Frontend {
			return nil, fmt.Errorf("temporal server: %s: %w", net.JoinHostPort(l.host, strconv.Itoa(want.Frontend)),
				syscall.EADDRINUSE)
		}
		if portsChosen != nil {
			portsChosen(ports)
		}
		before, listed := listeners()
		s, err := l.startOn(ctx, ports, logger)
		if err == nil {
			return s, nil
		}
		if listed == nil { // without the sockets from before, a socket of the try cannot be told from another's
			unlisten(before, ports)
		}
		if !errors.Is(err, syscall.EADDRINUSE) || try == portTries || ctx.Err() != nil {
			return nil, err
		}
		logger.Warn("a port was taken before the server bound it; trying fresh ports", tag.Error(err),
			tag.Attempt(int32(try)))
	}
}

// createDatabase creates the schema (when the database is new) and the namespace (when missing).
func createDatabase(sqlCfg *config.SQL, o Options, clusterName string) error {
	// A database whose creation a kill cut short must not pass for a finished one (its tables would be missing
	// forever): a marker file exists while the schema and namespace are created, and a database found beside it is
	// removed and created again. It holds no workflow yet, so nothing is lost.
	creating := o.DBFile + ".creating"
	if _, err := os.Stat(creating); err == nil {
		for _, p := range []string{o.DBFile, o.DBFile + "-wal", o.DBFile + "-shm"} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("embedded temporal: removing a database left half created: %w", err)
			}
		}
	}
	created := false
	if _, err := os.Stat(o.DBFile); errors.Is(err, os.ErrNotExist) {
		if err := syncedMarker(creating, true); err != nil {
			return fmt.Errorf("embedded temporal: %w", err)
		}
		if err := sqlite.SetupSchema(sqlCfg); err != nil {
			return fmt.Errorf("embedded temporal: creating schema in %s: %w", o.DBFile, err)
		}
		created = true
	}
	nsCfg, err := sqlite.NewNamespaceConfig(clusterName, o.Namespace, false, nil)
	if err != nil {
		return fmt.Errorf("embedded temporal: %w", err)
	}
	if err := sqlite.CreateNamespaces(sqlCfg, nsCfg); err != nil {
		return fmt.Errorf("embedded temporal: creating namespace %q in %s: %w", o.Namespace, o.DBFile, err)
	}
	if created {
		if err := syncedMarker(creating, false); err != nil {
			return fmt.Errorf("embedded temporal: %w", err)
		}
	}
	return nil
}

// startOn builds and starts the server on the given ports. The server reports a port it cannot bind through its
// logger's Fatal, which would exit the process with the cause only in the log file: Fatal panics instead (see
// fatalLogger) and the panic comes back here as an error.
func (l launch) startOn(ctx context.Context, ports Ports, logger log.Logger) (s *Server, err error) {
	defer func() {
		if r := recover(); r != nil {
			fatal, ok := r.(*fatalError)
			if !ok {
				panic(r)
			}
			s, err = nil, fmt.Errorf("embedded temporal: starting on ports %+v (log %s): %w", ports, l.logFile, fatal)
		}
	}()
	cfg := serverConfig(l.persistence, l.host, ports)
	var authorizer authorization.Authorizer = newSameUserAuthorizer()
	if !l.sameUserOnly {
		if authorizer, err = authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization); err != nil {
			return nil, fmt.Errorf("embedded temporal: %w", err)
		}
	}
	internode, err := internodeTLS()
	if err != nil {
		return nil, fmt.Errorf("embedded temporal: internode certificate: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("embedded temporal: %w", err)
	}
	addr := func(p int) string { return net.JoinHostPort(l.host, strconv.Itoa(p)) }
	dc := l.dc
	if dc == nil {
		dc = dynamicconfig.StaticClient{}
	}
	buildid.Set() // before the server makes its system workers
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: static.SingleLocalHost(addr(ports.Frontend)),
			primitives.HistoryService:  static.SingleLocalHost(addr(ports.History)),
			primitives.MatchingService: static.SingleLocalHost(addr(ports.Matching)),
			primitives.WorkerService:   static.SingleLocalHost(addr(ports.Worker)),
		}),
		temporal.WithLogger(fatalLogger{logger}),
		temporal.WithAuthorizer(authorizer),
		temporal.WithTLSConfigFactory(internode),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dc),
	)
	if err != nil {
		return nil, fmt.Errorf("embedded temporal: starting on ports %+v: %w", ports, err)
	}
	if err := srv.Start(); err != nil {
		_ = srv.Stop()
		return nil, fmt.Errorf("embedded temporal: starting (database %s, log %s): %w", l.database, l.logFile, err)
	}
	s = &Server{srv: srv, host: l.host, ports: ports, ns: l.namespace}
	if err := s.waitReady(ctx); err != nil {
		_ = srv.Stop()
		return nil, err
	}
	return s, nil
}

// syncedMarker creates (or removes) an empty marker file and syncs its folder, so the marker's presence survives a
// crash of the machine as well as of the process.
func syncedMarker(path string, present bool) error {
	if present {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	} else if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// HostPort is the frontend's gRPC address, for clients and workers.
func (s *Server) HostPort() string { return net.JoinHostPort(s.host, strconv.Itoa(s.ports.Frontend)) }

// Ports returns the ports in use, so a restart can ask for the same ones.
func (s *Server) Ports() Ports { return s.ports }

// Namespace is the namespace the server was started with.
func (s *Server) Namespace() string { return s.ns }

// Stop shuts every service down.
func (s *Server) Stop() error { return s.srv.Stop() }

func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := client.Dial(client.Options{HostPort: s.HostPort(), Namespace: s.ns, Logger: quietSDKLogger{}})
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			c.Close()
			if err == nil {
				return nil
			}
		}
		var denied *serviceerror.PermissionDenied
		if errors.As(err, &denied) { // waiting will not change it (sameUserAuthorizer)
			return fmt.Errorf("embedded temporal: frontend %s refuses this process: %s", s.HostPort(),
				firstNonEmpty(denied.Reason, denied.Error()))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("embedded temporal: frontend %s not ready: %w", s.HostPort(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func serverConfig(persistence config.Persistence, host string, p Ports) *config.Config {
	svc := func(port int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: port, BindOnIP: host}} // HTTPPort 0: no HTTP API
	}
	frontend := net.JoinHostPort(host, strconv.Itoa(p.Frontend))
	return &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: host},
		},
		Persistence: persistence,
		ClusterMetadata: &cluster.Config{
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{
			"frontend": svc(p.Frontend),
			"history":  svc(p.History),
			"matching": svc(p.Matching),
			"worker":   svc(p.Worker),
		},
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
		// The server's internal worker dials itself through this address.
		PublicClient: config.PublicClient{HostPort: frontend},
	}
}

func fileLogger(path string) (log.Logger, error) {
	if path == "" {
		return log.NewNoopLogger(), nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("embedded temporal: log folder: %w", err)
	}
	return log.NewZapLogger(log.BuildZapLogger(log.Config{Level: "warn", OutputFile: path, Format: "json"})), nil
}

// fill replaces zero ports with free ones, keeping the ones asked for when they are still free.
func (p Ports) fill(host string) (Ports, error) {
	out := p
	for _, port := range []*int{&out.Frontend, &out.History, &out.Matching, &out.Worker} {
		if *port != 0 && portFree(host, *port) {
			continue
		}
		free, err := freePortOn(host)
		if err != nil {
			return p, err
		}
		*port = free
	}
	return out, nil
}

func portFree(host string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// freePort picks a free port on the loopback address (see freePortOn).
func freePort() (int, error) { return freePortOn(host) }

// freePortOn picks a free port below Linux's ephemeral range (32768 and up). A port is closed again between being
// chosen and the server binding it; an ephemeral one could meanwhile become the source port of any outgoing
// connection on the machine, and the server would then fail to bind it and exit. Ports below the range are only
// taken by listeners that ask for them.
func freePortOn(host string) (int, error) {
	const lo, hi = 20000, 32768
	for range 100 {
		if p := lo + rand.IntN(hi-lo); portFree(host, p) {
			return p, nil
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// quietSDKLogger drops the SDK client's readiness-probe chatter.
type quietSDKLogger struct{}

func (quietSDKLogger) Debug(string, ...interface{}) {}
func (quietSDKLogger) Info(string, ...interface{})  {}
func (quietSDKLogger) Warn(string, ...interface{})  {}
func (quietSDKLogger) Error(string, ...interface{}) {}

// fatalLogger keeps the server's Fatal calls from exiting the process: it logs them as errors and panics with a
// *fatalError, which Start turns into its error (a Fatal on another goroutine still ends the process, but with the
// cause on stderr).
type fatalLogger struct{ log.Logger }

func (l fatalLogger) Fatal(msg string, tags ...tag.Tag) {
	l.Logger.Error(msg, tags...)
	panic(newFatalError(msg, tags))
}

func (l fatalLogger) With(tags ...tag.Tag) log.Logger {
	return fatalLogger{log.With(l.Logger, tags...)}
}

// fatalError is a server Fatal: its message, its tags as text, and the error among them.
type fatalError struct {
	msg   string
	cause error
}

func newFatalError(msg string, tags []tag.Tag) *fatalError {
	e := &fatalError{msg: msg}
	var parts []string
	for _, t := range tags {
		if zt, ok := t.(tag.ZapTag); ok {
			if err, ok := zt.Field().Interface.(error); ok && err != nil { // an error tag keeps its error here
				e.cause = err
				parts = append(parts, err.Error())
				continue
			}
		}
		parts = append(parts, fmt.Sprintf("%s=%v", t.Key(), t.Value()))
	}
	if len(parts) > 0 {
		e.msg += ": " + strings.Join(parts, ", ")
	}
	return e
}

func (e *fatalError) Error() string { return e.msg }
func (e *fatalError) Unwrap() error { return e.cause }
