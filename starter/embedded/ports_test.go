package embedded

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// occupy listens on port until the test ends, as another process taking it would.
func occupy(t *testing.T, port int) {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("occupying port %d: %v", port, err)
	}
	t.Cleanup(func() { _ = l.Close() })
}

// TestStartRetriesWhenAPortIsTaken takes one port between the moment Start picks it and the moment the server binds
// it. The server used to exit the whole process with status 1, the cause only in its log file; Start must instead
// pick fresh ports and come up (the ports fail through the server's Fatal).
func TestStartRetriesWhenAPortIsTaken(t *testing.T) {
	for _, which := range []string{"frontend", "history", "matching"} {
		t.Run(which, func(t *testing.T) {
			dir := t.TempDir()
			before := listeningPorts(t)
			pick := func(p Ports) int {
				return map[string]int{"frontend": p.Frontend, "history": p.History, "matching": p.Matching}[which]
			}
			var taken []int
			portsChosen = func(p Ports) {
				if len(taken) == 0 {
					occupy(t, pick(p))
					taken = append(taken, pick(p))
				}
			}
			defer func() { portsChosen = nil }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			srv, err := Start(ctx, Options{DBFile: filepath.Join(dir, "temporal.db"),
				LogFile: filepath.Join(dir, "temporal.log")})
			if err != nil {
				t.Fatalf("start with the %s port taken after it was chosen: %v", which, err)
			}
			defer srv.Stop()
			if len(taken) != 1 {
				t.Fatalf("the port was never taken: the test did not exercise the race")
			}
			if got := pick(srv.Ports()); got == taken[0] {
				t.Errorf("the server reports the taken port %d as its %s port", got, which)
			}
			// The failed try's services that had bound their ports must not keep listening (accepting connections
			// that nothing answers) for the life of the process.
			p := srv.Ports()
			mine := []int{p.Frontend, p.History, p.Matching, p.Worker, taken[0]}
			for _, port := range listeningPorts(t) {
				if !slices.Contains(mine, port) && !slices.Contains(before, port) {
					t.Errorf("the process still listens on port %d, of the try that failed (server %+v)", port, p)
				}
			}
		})
	}
}

// TestStartSaysWhyWhenPortsStayTaken takes the chosen frontend port at every try: Start must give up with an error
// that names the cause, not exit the process.
func TestStartSaysWhyWhenPortsStayTaken(t *testing.T) {
	dir := t.TempDir()
	tries := 0
	before := listeningPorts(t)
	portsChosen = func(p Ports) {
		tries++
		occupy(t, p.Frontend)
		before = append(before, p.Frontend)
	}
	defer func() { portsChosen = nil }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := Start(ctx, Options{DBFile: filepath.Join(dir, "temporal.db"), LogFile: filepath.Join(dir, "temporal.log")})
	if err == nil {
		_ = srv.Stop()
		t.Fatal("the server started although its frontend port was taken at every try")
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("the error does not name the cause: %v", err)
	}
	if tries < 2 {
		t.Errorf("Start tried %d time(s); it should retry on fresh ports", tries)
	}
	for _, port := range listeningPorts(t) {
		if !slices.Contains(before, port) {
			t.Errorf("the process still listens on port %d, of a try that failed", port)
		}
	}
}
