package jsonnet

import (
	"os"

	"github.com/spf13/pflag"

	"ctxlab/internal/cliflags"
)

// Flags are the jsonnet tool's command-line conventions for a spec, declared once for every program that reads
// one (starter run, compile, images build; the worker's --spec): external variables, top-level arguments and
// library folders, with the jsonnet tool's names.
type Flags struct {
	ExtStr, ExtStrFile, ExtCode cliflags.KV
	TLAStr, TLACode             cliflags.KV
	// JPath are the -J folders in command-line order (the right-most is searched first, then $JSONNET_PATH).
	JPath []string
}

// Register declares the flags on fs.
func (f *Flags) Register(fs *pflag.FlagSet) {
	f.ExtStr, f.ExtStrFile, f.ExtCode = cliflags.KV{}, cliflags.KV{}, cliflags.KV{}
	f.TLAStr, f.TLACode = cliflags.KV{}, cliflags.KV{}
	fs.Var(f.ExtStr, "ext-str", "Jsonnet external variable `K=V` (repeatable), as the jsonnet tool's --ext-str")
	fs.Var(f.ExtStrFile, "ext-str-file", "Jsonnet external variable `K=FILE` whose string is the file's text "+
		"(repeatable)")
	fs.Var(f.ExtCode, "ext-code", "Jsonnet external variable `K=CODE` whose value is the Jsonnet code's (repeatable)")
	fs.Var(f.TLAStr, "tla-str", "Jsonnet top-level argument `K=V` (repeatable), as the jsonnet tool's --tla-str")
	fs.Var(f.TLACode, "tla-code", "Jsonnet top-level argument `K=CODE` whose value is the Jsonnet code's (repeatable)")
	fs.StringArrayVarP(&f.JPath, "jpath", "J", nil, "library `DIR` searched for imports not found beside the "+
		"importing file (repeatable: the right-most first, then $JSONNET_PATH)")
}

// Options are the compiler options the flags and $JSONNET_PATH say.
func (f Flags) Options() Options {
	return Options{
		JPath:      SearchPath(f.JPath, os.Getenv("JSONNET_PATH")),
		ExtStr:     f.ExtStr,
		ExtStrFile: f.ExtStrFile,
		ExtCode:    f.ExtCode,
		TLAStr:     f.TLAStr,
		TLACode:    f.TLACode,
	}
}
