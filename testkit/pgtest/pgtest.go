// Package pgtest starts a private PostgreSQL cluster for a test: initdb in a temporary folder, the server on a free
// loopback port with no Unix socket, trust authentication for one superuser, stopped and removed when the test ends.
// It uses the binaries Debian's postgresql package installs (or initdb and pg_ctl on PATH). As root, which PostgreSQL
// refuses to run as, the cluster runs as the postgres user.
//
// A test calling Start is skipped when the binaries are missing, unless CTXLAB_REQUIRE_POSTGRES=1 (scripts/test sets
// it), which makes it fail with the command that installs them.
package pgtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// RequireEnv makes a missing PostgreSQL a failure instead of a skip.
const RequireEnv = "CTXLAB_REQUIRE_POSTGRES"

// installHint is what a machine without the binaries needs.
const installHint = "apt-get install -y postgresql"

// User is the cluster's superuser, the one URLs name.
const User = "ctxlab"

// Cluster is a running private PostgreSQL server.
type Cluster struct {
	// Port is the loopback port it listens on.
	Port int
	// Dir holds the data folder and the server's log.
	Dir string
	bin string
	as  *syscall.Credential
}

// URL is the address of database db on the cluster, as `starter server --db` takes it.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s", User, c.Port, db)
}

// Binaries returns the folder holding initdb and pg_ctl, or "" when PostgreSQL is not installed.
func Binaries() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "pg_ctl")) {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p)
		}
	}
	return ""
}

// version is the major version in a /usr/lib/postgresql/N/bin path, 0 when it has none.
func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// Start starts a cluster for t and stops it when t ends; it skips (or fails, see RequireEnv) t when PostgreSQL is
// not installed.
func Start(t testing.TB) *Cluster {
	t.Helper()
	bin := Binaries()
	if bin == "" {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("PostgreSQL is not installed (no initdb and pg_ctl under /usr/lib/postgresql/*/bin or on PATH) "+
				"and %s=1: install it with `%s`", RequireEnv, installHint)
		}
		t.Skipf("PostgreSQL is not installed (`%s`; %s=1 makes this a failure)", installHint, RequireEnv)
	}
	c := &Cluster{bin: bin}
	var uid, gid int = -1, -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("PostgreSQL refuses to run as root and there is no postgres user to run it as: %v", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		c.as = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// Not t.TempDir: its folders are private to root, and the cluster runs as another user.
	dir, err := os.MkdirTemp("", "ctxlab-pg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if c.as != nil {
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	c.Dir = dir
	data := filepath.Join(dir, "data")
	if out, err := c.run("initdb", "-D", data, "-U", User, "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// A port picked free may be taken before the server binds it: try a few.
	for try := 1; ; try++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		// Only the Temporal server is killed in the tests, never PostgreSQL: durability can go for speed.
		opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off "+
			"-c synchronous_commit=off -c full_page_writes=off -c max_connections=200", port)
		out, err := c.run("pg_ctl", "start", "-w", "-t", "120", "-D", data, "-l", filepath.Join(dir, "postgres.log"),
			"-o", opts)
		if err == nil {
			c.Port = port
			break
		}
		if try == 3 {
			log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
			t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
		}
	}
	t.Cleanup(func() {
		if out, err := c.run("pg_ctl", "stop", "-m", "immediate", "-w", "-D", data); err != nil {
			t.Logf("pg_ctl stop: %v\n%s", err, out)
		}
	})
	return c
}

// run runs one of the cluster's binaries as the cluster's user.
func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.Dir
	if c.as != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.as}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := runWithTimeout(cmd, 3*time.Minute)
	return out.Bytes(), err
}

func runWithTimeout(cmd *exec.Cmd, timeout time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not finish in %s", cmd.Path, timeout)
	}
}

// freePort is a loopback port free when asked.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
