package embedded

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"github.com/vishvananda/netlink"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/rpc/encryption"
	"google.golang.org/grpc/peer"
)

// Who may reach a server's ports. Every port is on a loopback or chosen address where any local user can connect,
// and graded code runs as another uid (activities/sandbox): so the frontend's gRPC API answers only processes of the
// server's own uid (sameUserAuthorizer), the history, matching and worker services speak only mutual TLS with a
// certificate made in memory at each start (internodeTLS), and the frontend's HTTP API is not opened.

// sameUserAuthorizer lets a frontend call through only from a TCP connection whose client socket belongs to the
// server's uid, as the kernel reports it (sock_diag); a caller whose uid cannot be told is refused.
type sameUserAuthorizer struct{ uid uint32 }

func newSameUserAuthorizer() sameUserAuthorizer { return sameUserAuthorizer{uid: uint32(os.Getuid())} }

func (a sameUserAuthorizer) Authorize(ctx context.Context, _ *authorization.Claims,
	_ *authorization.CallTarget) (authorization.Result, error) {
	uid, err := callerUID(ctx)
	switch {
	case err != nil:
		return authorization.Result{Decision: authorization.DecisionDeny,
			Reason: "ctxlab's embedded server answers only its own user, and could not tell the caller's: " + err.Error()}, nil
	case uid != a.uid:
		return authorization.Result{Decision: authorization.DecisionDeny,
			Reason: fmt.Sprintf("ctxlab's embedded server answers only its own user (uid %d), not uid %d", a.uid, uid)}, nil
	}
	return authorization.Result{Decision: authorization.DecisionAllow}, nil
}

// callerUID is the owner of the client end of the call's TCP connection: the socket whose local address is the
// call's peer address and whose remote address is the server's.
func callerUID(ctx context.Context) (uint32, error) {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil || p.LocalAddr == nil {
		return 0, fmt.Errorf("no peer address on the call")
	}
	client, ok1 := p.Addr.(*net.TCPAddr)
	server, ok2 := p.LocalAddr.(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("the call came over %s, not TCP", p.Addr.Network())
	}
	s, err := netlink.SocketGet(client, server)
	if err != nil {
		return 0, fmt.Errorf("looking up the socket %s -> %s: %w", client, server, err)
	}
	return s.UID, nil
}

// internodeTLS is mutual TLS for the services' own connections to each other: one key pair, made at start and kept
// in memory, is both the server and the client certificate, so a connection from anything else fails its
// handshake. The frontend's own listener stays plain (its clients are the starter, workers and the UI), and the
// server's internal workers reach it in plain too.
func internodeTLS() (*encryption.FixedTLSConfigProvider, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	const name = "ctxlab-internode"
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              []string{name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	pair := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}
	return &encryption.FixedTLSConfigProvider{
		InternodeServerConfig: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool},
		InternodeClientConfig: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair},
			RootCAs: pool, ServerName: name},
	}, nil
}
