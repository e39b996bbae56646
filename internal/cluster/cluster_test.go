package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// selfSigned writes a certificate and its key as PEM files and returns their paths.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ctxlab-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestFlags(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.Register(fs, "127.0.0.1:7233", "default")
	if err := fs.Parse([]string{"--address", "h:1", "--namespace", "ns", "--tls-cert", "c", "--tls-key", "k",
		"--tls-ca", "ca", "--tls-server-name", "srv", "--api-key-env", "K"}); err != nil {
		t.Fatal(err)
	}
	want := Options{Address: "h:1", Namespace: "ns", CertFile: "c", KeyFile: "k", CAFile: "ca", ServerName: "srv",
		APIKeyEnv: "K"}
	if o != want {
		t.Errorf("parsed %+v, want %+v", o, want)
	}
	if fs.Lookup("api-key") != nil {
		t.Error("an API key must not be a flag value")
	}
}

func TestClientOptions(t *testing.T) {
	log := zerolog.Nop()
	co, err := Options{Address: "h:1", Namespace: "ns", APIKeyEnv: "CTXLAB_TEST_NO_SUCH_KEY"}.ClientOptions(log)
	if err != nil || co.ConnectionOptions.TLS != nil || co.Credentials != nil || co.HostPort != "h:1" {
		t.Errorf("plain: %+v, %v", co, err)
	}

	t.Setenv("CTXLAB_TEST_KEY", "secret-key")
	co, err = Options{Address: "h:1", APIKeyEnv: "CTXLAB_TEST_KEY"}.ClientOptions(log)
	if err != nil || co.ConnectionOptions.TLS == nil || co.Credentials == nil {
		t.Errorf("an API key must bring TLS and credentials: %+v, %v", co, err)
	}

	cert, key := selfSigned(t)
	co, err = Options{CertFile: cert, KeyFile: key, CAFile: cert, ServerName: "srv"}.ClientOptions(log)
	if err != nil {
		t.Fatal(err)
	}
	tc := co.ConnectionOptions.TLS
	if tc == nil || len(tc.Certificates) != 1 || tc.RootCAs == nil || tc.ServerName != "srv" {
		t.Errorf("mutual TLS: %+v", tc)
	}

	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{CertFile: cert}, "--tls-cert and --tls-key go together"},
		{Options{CertFile: cert, KeyFile: cert}, "client certificate"},
		{Options{CAFile: key}, "no PEM certificate"},
		{Options{CAFile: filepath.Join(t.TempDir(), "none.pem")}, "CA bundle"},
	} {
		if _, err := c.o.ClientOptions(log); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

func TestDialUnreachable(t *testing.T) {
	old := DialTimeout
	DialTimeout = 3 * time.Second
	defer func() { DialTimeout = old }()
	start := time.Now()
	_, err := Dial(context.Background(), Options{Address: "127.0.0.1:1", Namespace: "ns"}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "cannot reach Temporal at 127.0.0.1:1 (namespace ns)") {
		t.Errorf("err = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to give up", d)
	}
}
