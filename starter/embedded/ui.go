package embedded

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	"github.com/temporalio/ui-server/v2/server/server_options"
)

// UI is a running Temporal Web UI: the ui-server's HTTP API over a frontend's gRPC address and the web pages it
// ships embedded, so no browser assets are fetched from anywhere.
type UI struct {
	srv       *uiserver.Server
	port      int
	namespace string
	done      chan struct{}
}

// StartUI serves the Web UI for the frontend at grpcAddress on 127.0.0.1:port (0 picks a free port) and returns
// once it answers. It is read-only: the UI is for reading histories, and a sweep is steered by the starter, so
// cancel, terminate, reset, signal and start buttons are off.
func StartUI(ctx context.Context, grpcAddress, namespace string, port int) (*UI, error) {
	if port == 0 {
		p, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("web ui: choosing a port: %w", err)
		}
		port = p
	} else if !portFree(port) {
		// Checked here because the ui-server's Start ends the process when it cannot listen.
		return nil, fmt.Errorf("web ui: port %d on %s is in use; pick another with --ui-port (0: any free one)", port, host)
	}
	if namespace == "" {
		namespace = "default"
	}
	cfg := &uiconfig.Config{
		TemporalGRPCAddress: grpcAddress,
		Host:                host,
		Port:                port,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		// Plain HTTP on the loopback interface: the CSRF cookie must not demand HTTPS.
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
		// No calls to the internet for release notes or news: sweeps run on machines without it.
		DisableNewsFetch:   true,
		NotifyOnNewVersion: false,
		// The server refuses every write; the switches below also hide the buttons.
		DisableWriteActions:       true,
		BatchActionsDisabled:      true,
		StartWorkflowDisabled:     true,
		WorkflowTerminateDisabled: true,
		WorkflowCancelDisabled:    true,
		WorkflowSignalDisabled:    true,
		WorkflowUpdateDisabled:    true,
		WorkflowResetDisabled:     true,
		WorkflowPauseDisabled:     true,
		ActivityCommandsDisabled:  true,
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("web ui: %w", err)
	}
	srv, err := newUIServer(cfg)
	if err != nil {
		return nil, err
	}
	u := &UI{srv: srv, port: port, namespace: namespace, done: make(chan struct{})}
	go func() {
		defer close(u.done)
		_ = srv.Start() // returns when Stop closes it
	}()
	if err := u.waitReady(ctx); err != nil {
		u.Stop()
		return nil, err
	}
	return u, nil
}

// StartUI serves the Web UI for this server's frontend and namespace.
func (s *Server) StartUI(ctx context.Context, port int) (*UI, error) {
	return StartUI(ctx, s.HostPort(), s.ns, port)
}

// newUIServer builds the ui-server, turning its panics on bad settings into an error.
func newUIServer(cfg *uiconfig.Config) (srv *uiserver.Server, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("web ui: %v", r)
		}
	}()
	return uiserver.NewServer(server_options.WithConfigProvider(cfg)), nil
}

// URL is the UI's address.
func (u *UI) URL() string { return "http://" + net.JoinHostPort(host, strconv.Itoa(u.port)) }

// WorkflowsURL is the page listing the namespace's workflows.
func (u *UI) WorkflowsURL() string {
	return u.URL() + "/namespaces/" + url.PathEscape(u.namespace) + "/workflows"
}

// Stop closes the UI's listener and waits for it to let go.
func (u *UI) Stop() {
	u.srv.Stop()
	select {
	case <-u.done:
	case <-time.After(5 * time.Second):
	}
}

func (u *UI) waitReady(ctx context.Context) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.URL()+"/healthz", nil)
		if err != nil {
			return fmt.Errorf("web ui: %w", err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("health check answered %s", resp.Status)
		}
		select {
		case <-u.done:
			return fmt.Errorf("web ui: the server on %s stopped before it answered", u.URL())
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("web ui: %s not ready: %w", u.URL(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
