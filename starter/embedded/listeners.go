package embedded

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// listener is a TCP socket this process listens on.
type listener struct {
	fd    int
	inode uint64
	port  int
}

// listeners returns the TCP sockets this process listens on, read from /proc: the sockets among its open files that
// /proc/net/tcp{,6} lists in state LISTEN.
func listeners() ([]listener, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	fdOf := map[uint64]int{}
	for _, e := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		inode, ok := strings.CutPrefix(link, "socket:[")
		if err != nil || !ok {
			continue
		}
		ino, err1 := strconv.ParseUint(strings.TrimSuffix(inode, "]"), 10, 64)
		fd, err2 := strconv.Atoi(e.Name())
		if err1 == nil && err2 == nil {
			fdOf[ino] = fd
		}
	}
	var out []listener
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if errors.Is(err, fs.ErrNotExist) { // no IPv6 in this kernel
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" {
				continue
			}
			ino, err := strconv.ParseUint(fields[9], 10, 64)
			fd, mine := fdOf[ino]
			if err != nil || !mine {
				continue
			}
			_, portHex, _ := strings.Cut(fields[1], ":")
			if port, err := strconv.ParseUint(portHex, 16, 16); err == nil {
				out = append(out, listener{fd: fd, inode: ino, port: int(port)})
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// unlisten stops the listening of the sockets on the try's ports that were opened since before was read. A try that
// fails on a taken port fails inside the server's construction, after the services built before had bound theirs, and
// leaves no handle to stop them: those sockets would accept connections that nothing answers for the life of the
// process. Shutting a listening socket down (Linux) takes it out of LISTEN without closing the descriptor, which its
// owner still holds and closes in its time.
func unlisten(before []listener, try Ports) {
	now, err := listeners()
	if err != nil {
		return
	}
	old := map[uint64]bool{}
	for _, l := range before {
		old[l.inode] = true
	}
	for _, l := range now {
		if old[l.inode] || (l.port != try.Frontend && l.port != try.History && l.port != try.Matching &&
			l.port != try.Worker) {
			continue
		}
		// The descriptor may have been closed and reused since the listing: shut down only the socket listed.
		var st unix.Stat_t
		if unix.Fstat(l.fd, &st) == nil && st.Ino == l.inode {
			_ = unix.Shutdown(l.fd, unix.SHUT_RDWR)
		}
	}
}
