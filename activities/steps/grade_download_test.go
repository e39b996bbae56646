package steps

import (
	"slices"
	"testing"
)

// The go command's words for a module of the build list that the offline build needed and the module cache lacked
// name it, whatever the go.mod's go version: a "go: downloading" line (go 1.17 and later), or, for an older go.mod
// (gopkg.in modules come without go.sum), the module lookup refused or its checksum not verifiable offline. A
// missing import is the patch's doing and names no module of the build list.
func TestModulesDownloaded(t *testing.T) {
	out := "go: downloading github.com/pkg/errors v0.9.1\n" +
		"m.go:3:8: module lookup disabled by GOPROXY=off\n" +
		"go: gopkg.in/check.v1@v0.0.0-20161208181325-20d25e280405: module lookup disabled by GOPROXY=off\n" +
		"example.com/dep@v1.0.0: verifying module: example.com/dep@v1.0.0: initializing sumdb.Client: dial tcp: no such host\n" +
		"m.go:4:8: cannot find module providing package example.com/new: module lookup disabled by GOPROXY=off\n" +
		"go: downloading github.com/pkg/errors v0.9.1\n"
	want := []string{"github.com/pkg/errors v0.9.1", "gopkg.in/check.v1 v0.0.0-20161208181325-20d25e280405",
		"example.com/dep v1.0.0"}
	if got := modulesDownloaded(out); !slices.Equal(got, want) {
		t.Errorf("modulesDownloaded = %q, want %q", got, want)
	}
}
