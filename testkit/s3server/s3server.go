// Package s3server runs a real S3-compatible server for tests: the Versity S3 Gateway (github.com/versity/versitygw)
// over a posix folder, on a loopback port. Its binary is built from the Go module proxy with `go install
// module@version` into the machine's cache folder (internal/images.CacheDir: /var/cache/ctxlab), once per machine, so
// that its dependency graph never enters ctxlab's go.mod.
package s3server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ctxlab/internal/flock"
	"ctxlab/internal/images"
	"ctxlab/testkit/e2e"
)

// Module and Version are the server built.
const (
	Module  = "github.com/versity/versitygw/cmd/versitygw"
	Version = "v1.8.0"
)

// Bucket is the bucket Start creates.
const Bucket = "ctxlab"

// Server is a running gateway.
type Server struct {
	// Endpoint is its http://127.0.0.1:PORT.
	Endpoint string
	// Access and Secret are its root user's keys.
	Access, Secret string
	// Dir is the folder it keeps the buckets in.
	Dir string
	// Log is its output.
	Log *e2e.SyncBuffer
	cmd *exec.Cmd
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Binary returns the gateway's binary, building it on the first call (minutes on a fresh machine).
func Binary() (string, error) {
	buildOnce.Do(func() { binary, buildErr = build() })
	return binary, buildErr
}

func build() (string, error) {
	cache, err := images.CacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, "tools", "versitygw-"+Version)
	exe := filepath.Join(bin, "versitygw")
	if _, err := os.Stat(exe); err == nil {
		return exe, nil
	}
	unlock, err := flock.Lock(context.Background(), bin+".lock", time.Second)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(exe); err == nil {
		return exe, nil
	}
	tmp := bin + ".building"
	os.RemoveAll(tmp)
	cmd := exec.Command("go", "install", Module+"@"+Version)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s@%s: %v\n%s", Module, Version, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return exe, nil
}

// Start builds (once) and starts a gateway over a new folder, with a bucket, and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	exe, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	port, err := e2e.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), Access: "ctxlabtestaccess",
		Secret: "ctxlab-test-secret-" + fmt.Sprint(port), Dir: t.TempDir(), Log: &e2e.SyncBuffer{}}
	side := t.TempDir()
	s.cmd = exec.Command(exe, "--port", fmt.Sprintf("127.0.0.1:%d", port), "posix", "--sidecar", side, s.Dir)
	s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+s.Access, "ROOT_SECRET_ACCESS_KEY="+s.Secret)
	s.cmd.Stdout, s.cmd.Stderr = s.Log, s.Log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		if t.Failed() {
			t.Logf("--- versitygw output (last 4000 bytes):\n%s", e2e.Tail(s.Log.String(), 4000))
		}
	})
	if err := s.waitAndCreateBucket(); err != nil {
		t.Fatalf("versitygw %s: %v\n%s", Version, err, s.Log.String())
	}
	return s
}

// waitAndCreateBucket waits until the gateway answers, then creates Bucket through its S3 API.
func (s *Server) waitAndCreateBucket() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.Endpoint, "http://"), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening after 30 s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s.Access, s.Secret, ""),
		HTTPClient:  &http.Client{Timeout: 30 * time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(Bucket)})
	return err
}

// URL is the s3:// store URL of the bucket, with prefix's folder when set.
func (s *Server) URL() string {
	return "s3://" + Bucket + "?region=us-east-1&use_path_style=true&disable_https=true&endpoint=" + s.Endpoint
}

// Env is what a process needs to reach the gateway: its keys, as the AWS SDK reads them, and no configuration
// files of the machine's.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.Access, "AWS_SECRET_ACCESS_KEY=" + s.Secret,
		"AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent", "AWS_EC2_METADATA_DISABLED=true"}
}

// Stop kills the gateway now (a test of a store that went away).
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
}
