package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"ctxlab/internal/cluster"
	"ctxlab/internal/flock"
	"ctxlab/starter/embedded"
)

// connection is a Temporal client, and the embedded server behind it when this process runs one.
type connection struct {
	client client.Client
	server *embedded.Server
	// attached is true when another starter process owns the run's embedded server: this one only watches.
	attached bool
	// ownerIdle is true when that owner is `starter ui`, which runs no workers: an attached run brings its own.
	ownerIdle bool
	// address is the frontend dialled (the Web UI talks to it too).
	address string
	unlock  func()
}

func (c *connection) close() {
	if c.client != nil {
		c.client.Close()
	}
	if c.server != nil {
		_ = c.server.Stop()
	}
	if c.unlock != nil {
		c.unlock()
	}
}

// serverFile records the embedded server of a run folder, so a restart reuses its ports and a second starter can
// attach to a running one.
type serverFile struct {
	PID     int            `json:"pid"`
	Address string         `json:"address"`
	Ports   embedded.Ports `json:"ports"`
	// Viewer marks a server started by `starter ui` (no workers).
	Viewer bool `json:"viewer,omitempty"`
}

// connect dials --address, or starts the run's embedded server; when another starter already runs it, dials that
// one instead.
func connect(ctx context.Context, co cluster.Options, runDir string, log zerolog.Logger) (*connection, error) {
	namespace := co.Namespace
	if co.Address != "" {
		c, err := cluster.Dial(ctx, co, log)
		if err != nil {
			return nil, err
		}
		return &connection{client: c, address: co.Address}, nil
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, err
	}
	unlock, held, err := lockRun(filepath.Join(runDir, "starter.lock"))
	if err != nil {
		return nil, err
	}
	sfPath := filepath.Join(runDir, "server.json")
	var sf serverFile
	if b, err := os.ReadFile(sfPath); err == nil {
		_ = json.Unmarshal(b, &sf)
	}
	if held {
		if sf.Address == "" {
			return nil, fmt.Errorf("another starter holds %s but has not published its server yet; try again",
				filepath.Join(runDir, "starter.lock"))
		}
		log.Info().Int("pid", sf.PID).Str("address", sf.Address).Msg("another starter runs this sweep; attaching to it")
		c, err := dial(ctx, sf.Address, namespace, log)
		if err != nil {
			return nil, err
		}
		return &connection{client: c, attached: true, ownerIdle: sf.Viewer, address: sf.Address}, nil
	}
	srv, err := embedded.Start(ctx, embedded.Options{
		DBFile:    filepath.Join(runDir, "temporal.db"),
		LogFile:   filepath.Join(runDir, "temporal.log"),
		Namespace: namespace,
		Ports:     sf.Ports,
	})
	if err != nil {
		unlock()
		return nil, err
	}
	sf = serverFile{PID: os.Getpid(), Address: srv.HostPort(), Ports: srv.Ports()}
	if b, err := json.Marshal(sf); err == nil {
		_ = os.WriteFile(sfPath, b, 0o644)
	}
	c, err := dial(ctx, srv.HostPort(), namespace, log)
	if err != nil {
		_ = srv.Stop()
		unlock()
		return nil, err
	}
	return &connection{client: c, server: srv, unlock: unlock, address: srv.HostPort()}, nil
}

// dial connects to an embedded server (this process's or another starter's): plain, on this machine.
func dial(ctx context.Context, address, namespace string, log zerolog.Logger) (client.Client, error) {
	return cluster.Dial(ctx, cluster.Options{Address: address, Namespace: namespace}, log)
}

// lockRun takes the run folder's lock. held is true (and unlock a no-op) when another process has it.
func lockRun(path string) (unlock func(), held bool, err error) {
	unlock, held, err = flock.TryLock(path)
	if held {
		unlock = func() {}
	}
	return unlock, held, err
}
