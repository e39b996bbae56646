package embedded

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	uiapi "github.com/temporalio/ui-server/v2/server/api"
	uiauth "github.com/temporalio/ui-server/v2/server/auth"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uicors "github.com/temporalio/ui-server/v2/server/cors"
	uicsrf "github.com/temporalio/ui-server/v2/server/csrf"
	uiheaders "github.com/temporalio/ui-server/v2/server/headers"
	uiroute "github.com/temporalio/ui-server/v2/server/route"
	uiassets "github.com/temporalio/ui-server/v2/ui"
)

// UI is a running Temporal Web UI: the ui-server's HTTP API over a frontend's gRPC address and the web pages it
// ships embedded, so no browser assets are fetched from anywhere.
type UI struct {
	srv       *http.Server
	port      int
	namespace string
	done      chan struct{}
}

// StartUI serves the Web UI for the frontend at grpcAddress on 127.0.0.1:port (0 picks a free port) and returns
// once it answers. It answers only the server's own uid (sameUserUI), as the frontend does. It is read-only: the UI
// is for reading histories, and a sweep is steered by the starter, so cancel, terminate, reset, signal and start
// buttons are off, and guardUI refuses every request but the UI's reads.
func StartUI(ctx context.Context, grpcAddress, namespace string, port int) (*UI, error) {
	if port == 0 {
		p, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("web ui: choosing a port: %w", err)
		}
		port = p
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
		// The ui-server refuses writes too, and the switches below hide the buttons.
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
	app, err := newUIApp(cfg)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("web ui: port %d on %s is in use; pick another with --ui-port (0: any free one): %w",
			port, host, err)
	}
	srv := &http.Server{Handler: sameUserUI(guardUI(app)), ConnContext: withConnOwner,
		ReadHeaderTimeout: 10 * time.Second}
	u := &UI{srv: srv, port: port, namespace: namespace, done: make(chan struct{})}
	go func() {
		defer close(u.done)
		_ = srv.Serve(l) // returns when Stop closes it
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

// newUIApp assembles the ui-server's HTTP application (its API over the frontend, its CSRF and CORS checks, and the
// embedded pages) from the ui-server's exported parts, so that ctxlab serves it itself, behind guardUI, instead of
// letting the ui-server open an unguarded listener. Panics of the parts on bad settings become an error.
func newUIApp(cfg *uiconfig.Config) (app *echo.Echo, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("web ui: %v", r)
		}
	}()
	// With no refresh interval set, the provider starts no goroutine and needs no closing.
	provider, err := uiconfig.NewConfigProviderWithRefresh(cfg)
	if err != nil {
		return nil, fmt.Errorf("web ui: %w", err)
	}
	app = echo.New()
	app.HideBanner, app.HidePort = true, true
	app.Use(middleware.Recover(), middleware.Gzip())
	app.Use(uicors.CORSMiddleware(uicors.CORSConfig{
		AllowHeaders: []string{echo.HeaderOrigin, echo.HeaderContentType, echo.HeaderAccept, echo.HeaderXCSRFToken,
			echo.HeaderAuthorization, uiauth.AuthorizationExtrasHeader, "Caller-Type"},
		AllowCredentials: true,
		ConfigProvider:   provider,
	}))
	app.Use(middleware.Secure())
	cookieSecure := !cfg.CORS.CookieInsecure
	app.Use(uicsrf.EnsureTokenCookie(cookieSecure))
	app.Use(middleware.CSRFWithConfig(uicsrf.MiddlewareConfig(provider, cookieSecure)))
	uiroute.SetHealthRoute(app)
	forward := []uiapi.Middleware{uiheaders.WithForwardHeaders([]string{uiauth.AuthorizationExtrasHeader, "Caller-Type"})}
	if err := uiroute.SetAPIRoutes(app, provider, forward); err != nil {
		return nil, fmt.Errorf("web ui: %w", err)
	}
	assets, err := uiassets.Assets()
	if err != nil {
		return nil, fmt.Errorf("web ui: pages: %w", err)
	}
	if assets, err = fs.Sub(assets, "local"); err != nil {
		return nil, fmt.Errorf("web ui: pages: %w", err)
	}
	if err := uiroute.SetUIRoutes(app, cfg.PublicPath, assets, provider); err != nil {
		return nil, fmt.Errorf("web ui: pages: %w", err)
	}
	uiroute.SetRenderRoute(app, cfg.PublicPath)
	return app, nil
}

// URL is the UI's address.
func (u *UI) URL() string { return "http://" + net.JoinHostPort(host, strconv.Itoa(u.port)) }

// WorkflowsURL is the page listing the namespace's workflows.
func (u *UI) WorkflowsURL() string {
	return u.URL() + "/namespaces/" + url.PathEscape(u.namespace) + "/workflows"
}

// Stop closes the UI's listener and connections and waits for it to let go.
func (u *UI) Stop() {
	_ = u.srv.Close()
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
