// Package cluster connects ctxlab's processes to a Temporal cluster: the flags they share (address, namespace, TLS,
// API key) and a dial that fails with a clear message when the server cannot be reached.
package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"ctxlab/internal/logs"
)

// DefaultAPIKeyEnv is the environment variable an API key is read from, the one the Temporal CLI reads too.
const DefaultAPIKeyEnv = "TEMPORAL_API_KEY"

// DialTimeout bounds how long Dial waits for the server before giving up.
var DialTimeout = 15 * time.Second

// Options say how to reach a Temporal cluster.
type Options struct {
	Address   string
	Namespace string
	// TLS turns on TLS with the system's roots; the files below turn it on too.
	TLS bool
	// CertFile and KeyFile are a client certificate for mutual TLS.
	CertFile, KeyFile string
	// CAFile is a PEM bundle of roots to trust instead of the system's.
	CAFile string
	// ServerName overrides the name checked in the server's certificate.
	ServerName string
	// APIKeyEnv names the environment variable holding an API key. The key itself is never a flag, so it shows in
	// no process list, shell history or log.
	APIKeyEnv string
}

// Register adds the connection flags to fs; address and namespace default as given.
func (o *Options) Register(fs *flag.FlagSet, address, namespace string) {
	fs.StringVar(&o.Address, "address", address, "Temporal frontend `HOST:PORT`")
	fs.StringVar(&o.Namespace, "namespace", namespace, "Temporal namespace")
	fs.BoolVar(&o.TLS, "tls", false, "connect with TLS (implied by the other --tls-* flags and by an API key)")
	fs.StringVar(&o.CertFile, "tls-cert", "", "client certificate `FILE` (PEM) for mutual TLS")
	fs.StringVar(&o.KeyFile, "tls-key", "", "client key `FILE` (PEM) for mutual TLS")
	fs.StringVar(&o.CAFile, "tls-ca", "", "CA bundle `FILE` (PEM) to verify the server with, instead of the system roots")
	fs.StringVar(&o.ServerName, "tls-server-name", "", "server `NAME` to verify in its certificate")
	fs.StringVar(&o.APIKeyEnv, "api-key-env", DefaultAPIKeyEnv,
		"environment `VARIABLE` holding an API key for hosted Temporal (used when set and not empty)")
}

// apiKey is the API key from the environment, if any.
func (o Options) apiKey() string {
	if o.APIKeyEnv == "" {
		return ""
	}
	return os.Getenv(o.APIKeyEnv)
}

// tlsConfig builds the TLS settings, or nil for a plain connection.
func (o Options) tlsConfig() (*tls.Config, error) {
	if !o.TLS && o.CertFile == "" && o.KeyFile == "" && o.CAFile == "" && o.ServerName == "" && o.apiKey() == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CA bundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA bundle %s: no PEM certificate in it", o.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// ClientOptions are the Temporal SDK's options for o.
func (o Options) ClientOptions(log zerolog.Logger) (client.Options, error) {
	tlsCfg, err := o.tlsConfig()
	if err != nil {
		return client.Options{}, err
	}
	co := client.Options{HostPort: o.Address, Namespace: o.Namespace, Logger: logs.Temporal{L: log},
		ConnectionOptions: client.ConnectionOptions{TLS: tlsCfg}}
	if key := o.apiKey(); key != "" {
		co.Credentials = client.NewAPIKeyStaticCredentials(key)
	}
	return co, nil
}

// Dial connects and checks that the server answers and has the namespace, so that a process refuses to start
// instead of waiting forever on a wrong address.
func Dial(ctx context.Context, o Options, log zerolog.Logger) (client.Client, error) {
	co, err := o.ClientOptions(log)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	c, err := client.DialContext(dctx, co)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Temporal at %s (namespace %s): %w", o.Address, o.Namespace, err)
	}
	_, err = c.WorkflowService().DescribeNamespace(dctx,
		&workflowservice.DescribeNamespaceRequest{Namespace: o.Namespace})
	var notFound *serviceerror.NamespaceNotFound
	switch {
	case errors.As(err, &notFound):
		c.Close()
		return nil, fmt.Errorf("namespace %q not found at Temporal %s; create it (temporal operator namespace create %s) "+
			"or pass --namespace", o.Namespace, o.Address, o.Namespace)
	case err != nil && !isPermissionDenied(err):
		c.Close()
		return nil, fmt.Errorf("cannot reach Temporal at %s (namespace %s): %w", o.Address, o.Namespace, err)
	}
	return c, nil
}

// isPermissionDenied is true for credentials that may use a namespace without describing it.
func isPermissionDenied(err error) bool {
	var pd *serviceerror.PermissionDenied
	return errors.As(err, &pd)
}
