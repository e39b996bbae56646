package sweepclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"ctxlab/internal/cluster"
	"ctxlab/internal/flock"
	"ctxlab/runfolder"
	"ctxlab/starter/embedded"
)

// Connection is a Temporal client, and the embedded server behind it when this process runs one.
type Connection struct {
	Client client.Client
	server *embedded.Server
	// attached is true when another starter process owns the run's embedded server: this one only watches.
	attached bool
	// ownerIdle is true when that owner is `starter ui`, which runs no workers: an attached run brings its own.
	ownerIdle bool
	// address is the frontend dialled (the Web UI talks to it too).
	address string
	unlock  func()
	// serverFile is the run folder's server.json when this process publishes its server there.
	serverFile string
}

func (c *Connection) Close() {
	if c.Client != nil {
		c.Client.Close()
	}
	if c.server != nil {
		// Unpublished first, ports kept for the next start: a starter attached to this server sees it go (see
		// watchOwner) and waits for the lock instead of attaching to a server that is stopping.
		if sf, ok := ReadServerFile(c.serverFile); ok && sf.PID == os.Getpid() {
			sf.Address = ""
			_ = writeServerFile(c.serverFile, sf)
		}
		_ = c.server.Stop()
	}
	if c.unlock != nil {
		c.unlock()
	}
}

// ServerFile records the embedded server of a run folder, so a restart reuses its ports and a second starter can
// attach to a running one.
type ServerFile struct {
	PID     int            `json:"pid"`
	Address string         `json:"address"`
	Ports   embedded.Ports `json:"ports"`
	// Viewer marks a server started by `starter ui` (no workers).
	Viewer bool `json:"viewer,omitempty"`
}

// connect dials --address, or starts the run's embedded server; when another starter already runs it, dials that
// one instead.
func Connect(ctx context.Context, co cluster.Options, runDir string, log zerolog.Logger) (*Connection, error) {
	return connectFresh(ctx, co, runDir, false, log)
}

// connectFresh is connect that, with freshDB, first moves the run's database aside (embedded.MoveAside) when this
// process is to start the server: for a database SQLite cannot read. The node memos, the response cache and
// results.jsonl live outside it, so the sweep run again on a new database redoes no finished step.
func connectFresh(ctx context.Context, co cluster.Options, runDir string, freshDB bool, log zerolog.Logger) (
	*Connection, error) {
	namespace := co.Namespace
	if co.Address != "" {
		c, err := cluster.Dial(ctx, co, log)
		if err != nil {
			return nil, err
		}
		// A server of its own can be restarted under a running sweep: waiting for the sweep outlasts that.
		return &Connection{Client: cluster.Patient(c, co.Address, log), address: co.Address}, nil
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, err
	}
	lockPath := runfolder.StarterLockPath(runDir)
	sfPath := runfolder.Server(runDir)
	unlock, attachTo, err := LockOrWait(ctx, lockPath, sfPath, attachWait, log)
	if err != nil {
		return nil, err
	}
	if attachTo != nil {
		log.Info().Int("pid", attachTo.PID).Str("address", attachTo.Address).
			Msg("another starter runs this sweep; attaching to it")
		if freshDB {
			log.Warn().Msg("--fresh-db ignored: that starter's server has the database open")
		}
		c, err := Dial(ctx, attachTo.Address, namespace, log)
		if err != nil {
			return nil, err
		}
		return &Connection{Client: c, attached: true, ownerIdle: attachTo.Viewer, address: attachTo.Address}, nil
	}
	return startOwnServer(ctx, runDir, namespace, freshDB, unlock, log)
}

// startOwnServer starts the run folder's embedded server (on a fresh database with freshDB), holding the run's
// lock (unlock lets it go), publishes it in server.json and connects to it.
func startOwnServer(ctx context.Context, runDir, namespace string, freshDB bool, unlock func(),
	log zerolog.Logger) (*Connection, error) {
	sfPath := runfolder.Server(runDir)
	var sf ServerFile // the last server's ports, reused when free
	if b, err := runfolder.ReadFile(sfPath); err == nil {
		_ = json.Unmarshal(b, &sf)
	}
	dbFile := runfolder.TemporalDBPath(runDir)
	if freshDB {
		moved, err := embedded.MoveAside(dbFile, time.Now())
		if err != nil {
			unlock()
			return nil, err
		}
		if moved != "" {
			log.Warn().Str("kept_as", moved).Msg("starting over on a fresh Temporal database; finished steps come " +
				"from their memos")
		}
	}
	srv, err := embedded.Start(ctx, embedded.Options{
		DBFile:    dbFile,
		LogFile:   runfolder.TemporalLogPath(runDir),
		Namespace: namespace,
		Ports:     sf.Ports,
	})
	if err != nil {
		unlock()
		return nil, err
	}
	sf = ServerFile{PID: os.Getpid(), Address: srv.HostPort(), Ports: srv.Ports()}
	if err := writeServerFile(sfPath, sf); err != nil {
		log.Warn().Err(err).Msg("could not publish the server in server.json; other starters cannot attach")
	}
	c, err := Dial(ctx, srv.HostPort(), namespace, log)
	if err != nil {
		_ = srv.Stop()
		unlock()
		return nil, err
	}
	return &Connection{Client: c, server: srv, unlock: unlock, address: srv.HostPort(), serverFile: sfPath}, nil
}

// writeServerFile publishes a server by renaming a finished file into place, so a starter waiting to attach never
// reads half of it.
func writeServerFile(path string, sf ServerFile) error {
	b, err := json.Marshal(sf)
	if err != nil {
		return err
	}
	return runfolder.WriteAtomic(path, b)
}

// Dial connects to an embedded server (this process's or another starter's): plain, on this machine.
func Dial(ctx context.Context, address, namespace string, log zerolog.Logger) (client.Client, error) {
	return cluster.Dial(ctx, cluster.Options{Address: address, Namespace: namespace}, log)
}

// attachWait bounds how long a starter waits for another one, which holds the run folder, to publish its server.
// Starting the embedded server takes seconds, more on a loaded machine.
const attachWait = 3 * time.Minute

// LockOrWait takes the run folder's lock and records this process's pid in it. When another process holds the lock,
// it waits (up to wait) until that process has published its server in server.json, and returns it to attach to;
// should the holder exit meanwhile, the lock is taken after all. A server.json left by an earlier process does not
// count: it must name the pid the lock holder recorded.
func LockOrWait(ctx context.Context, lockPath, sfPath string, wait time.Duration,
	log zerolog.Logger) (unlock func(), published *ServerFile, err error) {
	deadline := time.Now().Add(wait)
	said := false
	for {
		unlock, held, err := lockRun(lockPath)
		if err != nil {
			return nil, nil, err
		}
		if !held {
			if err := recordHolder(lockPath); err != nil {
				unlock()
				return nil, nil, fmt.Errorf("recording this starter in %s: %w", lockPath, err)
			}
			return unlock, nil, nil
		}
		holder := LockHolder(lockPath)
		if sf, ok := ReadServerFile(sfPath); ok && holder != 0 && sf.PID == holder && sf.Address != "" {
			return nil, &sf, nil
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("another starter (pid %d) holds %s but published no server in %s (see %s); "+
				"is it stuck?", holder, lockPath, wait, runfolder.TemporalLogPath(filepath.Dir(lockPath)))
		}
		if !said {
			log.Info().Int("pid", holder).Str("lock", lockPath).Dur("up_to", wait).
				Msg("another starter is starting this sweep's server; waiting to attach to it")
			said = true
		}
		if err := flock.Sleep(ctx, 200*time.Millisecond); err != nil {
			return nil, nil, err
		}
	}
}

// recordHolder writes this process's pid into the lock file it holds, for LockHolder.
func recordHolder(lockPath string) error {
	f, err := runfolder.OpenFile(lockPath, os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// LockHolder is the pid the lock's holder recorded in the lock file, 0 when it has not yet.
func LockHolder(lockPath string) int {
	b, err := runfolder.ReadFile(lockPath)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// watchOwner watches, for a starter attached to another's server, that the owner still serves it: every half second
// it reads server.json, and when the file no longer names that address with a live process (the owner finished
// and stopped its server, or was killed), it calls gone. It returns when ctx ends.
func watchOwner(ctx context.Context, runDir, address string, gone func()) {
	for {
		if err := flock.Sleep(ctx, 500*time.Millisecond); err != nil {
			return
		}
		sf, ok := ReadServerFile(runfolder.Server(runDir))
		if !ok || !processAlive(sf.PID) || sf.Address != address {
			gone()
			return
		}
	}
}

// processAlive reports whether a process of that pid exists (signal 0 checks without touching it).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func ReadServerFile(path string) (ServerFile, bool) {
	var sf ServerFile
	b, err := runfolder.ReadFile(path)
	if err != nil || json.Unmarshal(b, &sf) != nil {
		return sf, false
	}
	return sf, true
}

// lockRun takes the run folder's lock. held is true (and unlock a no-op) when another process has it.
func lockRun(path string) (unlock func(), held bool, err error) {
	unlock, held, err = flock.TryLock(path)
	if held {
		unlock = func() {}
	}
	return unlock, held, err
}
