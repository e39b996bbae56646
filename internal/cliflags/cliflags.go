// Package cliflags holds what the starter's and the worker's command lines share beyond the flag package: repeated
// K=V flags, and long flags written with one dash (-runs) as Go's flag package accepted them.
package cliflags

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// KV collects repeated K=V flags (--ext-str a=1 --ext-str b=2). Unlike pflag's string-to-string flags it does not
// split on commas, so a value may hold one.
type KV map[string]string

func (kv KV) String() string {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + kv[k]
	}
	return strings.Join(parts, ",")
}

// Set adds one K=V.
func (kv KV) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	kv[k] = v
	return nil
}

// Type names the value in help when the usage text does not.
func (kv KV) Type() string { return "K=V" }

// GoStyleArgs rewrites -name to --name for fs's long flags (pflag would read -name as the one-letter flags n, a, m,
// e), so the single-dash spelling Go's flag package taught people keeps working. Flag values (even ones that start
// with a dash) and everything after "--" are left alone.
func GoStyleArgs(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(out, args[i:]...)
		}
		if len(arg) < 2 || arg[0] != '-' {
			out = append(out, arg)
			continue
		}
		body := strings.TrimPrefix(arg[1:], "-")
		name, _, hasValue := strings.Cut(body, "=")
		f := fs.Lookup(name)
		if f == nil && name != "" && arg[1] != '-' {
			// A one-letter flag, perhaps with its value attached (-J lib, -Jlib).
			f = fs.ShorthandLookup(name[:1])
			hasValue = hasValue || len(name) > 1
		}
		if f != nil && len(name) > 1 && arg[1] != '-' && f.Name == name {
			arg = "-" + arg
		}
		out = append(out, arg)
		if f != nil && !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			i++ // the flag's value, even if it starts with a dash
			out = append(out, args[i])
		}
	}
	return out
}
