// Package buildid names this binary to Temporal's SDK cheaply.
//
// The SDK records a "binary checksum" with every workflow task a worker completes (reset points for a binary marked
// bad). Unless told one, it computes it as the MD5 of the whole executable, the first time any worker of the
// process is made: about 0.4 s of CPU for ctxlab's 290 MB starter, on the path of every process start, the embedded
// server's own system workers included. Set tells it one from the build's recorded module and VCS information.
package buildid

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime/debug"
	"sync"

	"go.temporal.io/sdk/worker"
)

var once sync.Once

// Set gives the SDK this binary's identifier, once per process, before any worker or embedded server is made.
func Set() { once.Do(func() { worker.SetBinaryChecksum(ID()) }) }

// ID is "ctxlab-" and a digest of the build information the Go toolchain records in the binary (main module,
// dependencies and their versions, VCS revision and whether the tree was modified, build settings); "ctxlab" when the
// binary carries none.
func ID() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "ctxlab"
	}
	sum := sha256.Sum256([]byte(info.String()))
	return "ctxlab-" + hex.EncodeToString(sum[:8])
}

// Version names the ctxlab source a binary was built from, for a starter to compare with its workers': the main
// module's version, with the VCS revision and a mark of a modified tree when the build recorded them ("(devel)"
// alone when it recorded neither, as with -buildvcs=false).
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))]
		if modified == "true" {
			v += "+modified"
		}
	}
	return v
}
