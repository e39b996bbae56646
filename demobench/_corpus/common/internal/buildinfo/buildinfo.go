// Package buildinfo reports the version a binary was built from.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Version is set with -ldflags "-X .../internal/buildinfo.Version=v1.2.3" by release builds.
var Version = ""

// String returns the release version, or the module version and VCS revision recorded by the Go tool, or "devel".
func String() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			v += "-dirty"
		}
	}
	return strings.TrimSpace(v)
}
