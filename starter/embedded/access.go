package embedded

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/rpc/encryption"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/peer"
)

// Who may reach a server's ports. Every port is on a loopback or chosen address where any local user can connect,
// and graded code runs as another uid (grading/sandbox): so the frontend's gRPC API answers only processes of the
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
	uid, err := socketUID(client, server)
	if err != nil {
		return 0, fmt.Errorf("looking up the socket %s -> %s: %w", client, server, err)
	}
	return uid, nil
}

// socketUID asks the kernel (sock_diag, NETLINK_SOCK_DIAG) for the owner of the TCP socket local -> remote with one
// exact lookup, not a dump of every socket (which takes milliseconds on a busy machine). The request is a
// struct inet_diag_req_v2 (linux/inet_diag.h), the answer a struct inet_diag_msg.
func socketUID(local, remote *net.TCPAddr) (uint32, error) {
	family, size := unix.AF_INET, net.IPv4len
	lip, rip := local.IP.To4(), remote.IP.To4()
	if lip == nil || rip == nil {
		family, size, lip, rip = unix.AF_INET6, net.IPv6len, local.IP.To16(), remote.IP.To16()
	}
	if lip == nil || rip == nil {
		return 0, fmt.Errorf("not IP addresses")
	}
	const hdrLen, reqLen = unix.SizeofNlMsghdr, 56
	msg := make([]byte, hdrLen+reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(msg[8:], 1) // sequence number
	req := msg[hdrLen:]
	req[0], req[1] = byte(family), unix.IPPROTO_TCP
	ne.PutUint32(req[4:], 0xffffffff) // every state
	id := req[8:]                     // struct inet_diag_sockid: ports and addresses in network order
	binary.BigEndian.PutUint16(id[0:], uint16(local.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(remote.Port))
	copy(id[4:4+size], lip)
	copy(id[20:20+size], rip)
	ne.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], 0xffffffff)

	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	buf := make([]byte, 512)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	if n < hdrLen+4 {
		return 0, fmt.Errorf("sock_diag: a short answer (%d bytes)", n)
	}
	switch typ := ne.Uint16(buf[4:]); typ {
	case unix.NLMSG_ERROR:
		return 0, fmt.Errorf("sock_diag: %w", unix.Errno(-int32(ne.Uint32(buf[hdrLen:]))))
	case unix.SOCK_DIAG_BY_FAMILY:
	default:
		return 0, fmt.Errorf("sock_diag: an answer of type %d", typ)
	}
	const uidAt = hdrLen + 4 + 48 + 12 // after family, state, timer, retrans, the sockid, expires, rqueue, wqueue
	if n < uidAt+4 {
		return 0, fmt.Errorf("sock_diag: a short answer (%d bytes)", n)
	}
	return ne.Uint32(buf[uidAt:]), nil
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
