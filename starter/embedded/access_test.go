package embedded

import (
	"context"
	"net"
	"os"
	"testing"

	"google.golang.org/grpc/peer"
)

// loopbackPeer is a call's peer as the frontend sees it: a real loopback connection's two ends.
func loopbackPeer(t testing.TB) context.Context {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	t.Cleanup(func() { client.Close(); server.Close() })
	return peer.NewContext(context.Background(), &peer.Peer{Addr: server.RemoteAddr(), LocalAddr: server.LocalAddr()})
}

// TestCallerUIDIsTheClientSocketsOwner: the uid the guard reads for a loopback call is this process's.
func TestCallerUIDIsTheClientSocketsOwner(t *testing.T) {
	uid, err := callerUID(loopbackPeer(t))
	if err != nil {
		t.Fatal(err)
	}
	if int(uid) != os.Getuid() {
		t.Errorf("caller uid %d, want this process's %d", uid, os.Getuid())
	}
	if _, err := callerUID(context.Background()); err == nil {
		t.Error("a call without a peer got a uid")
	}
}

// BenchmarkCallerUID is what the guard adds to every frontend call: one sock_diag query.
func BenchmarkCallerUID(b *testing.B) {
	ctx := loopbackPeer(b)
	for b.Loop() {
		if _, err := callerUID(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
