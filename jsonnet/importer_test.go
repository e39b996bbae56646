package jsonnet

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSearchPath(t *testing.T) {
	sep := string(os.PathListSeparator)
	got := SearchPath([]string{"j1", "", "j2"}, "e1"+sep+sep+"e2")
	if want := []string{"j2", "j1", "e1", "e2"}; !slices.Equal(got, want) {
		t.Errorf("search path %v, want %v (right-most -J first, then JSONNET_PATH left-most first)", got, want)
	}
	if got := SearchPath(nil, ""); len(got) != 0 {
		t.Errorf("no flags, no JSONNET_PATH: %v", got)
	}
}

// librarySpec names its experiment after the library it imported, so the test can tell which copy was found.
const librarySpec = `local ctxlab = import 'ctxlab.libsonnet';
local lib = import 'mylib.libsonnet';
ctxlab.experiment({ name: lib.name, dataset: ctxlab.datasets.swebench('d.jsonl'),
  models: [ctxlab.models.offline], methods: [ctxlab.methods.no_source] })
`

func TestLibraryFolders(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"spec/spec.jsonnet":      librarySpec,
		"j1/mylib.libsonnet":     "{ name: 'from-j1' }",
		"j2/mylib.libsonnet":     "{ name: 'from-j2' }",
		"env/mylib.libsonnet":    "{ name: 'from-env' }",
		"nested/mylib.libsonnet": "(import 'helper.libsonnet') { name+: '-nested' }",
		// A library's own imports are searched beside it first, then in the library folders.
		"nested/helper.libsonnet": "{ name: 'helper' }",
	})
	spec := filepath.Join(dir, "spec", "spec.jsonnet")
	j := func(names ...string) []string {
		var dirs []string
		for _, n := range names {
			dirs = append(dirs, filepath.Join(dir, n))
		}
		return dirs
	}
	for _, tc := range []struct {
		jpath []string
		want  string
	}{
		{SearchPath(j("j1"), ""), "from-j1"},
		{SearchPath(j("j1", "j2"), ""), "from-j2"},                  // right-most -J wins
		{SearchPath(j("j1"), filepath.Join(dir, "env")), "from-j1"}, // -J before JSONNET_PATH
		{SearchPath(nil, filepath.Join(dir, "env")), "from-env"},    // JSONNET_PATH alone
		{SearchPath(j("nested"), filepath.Join(dir, "j1")), "helper-nested"},
	} {
		e, err := Compile(spec, Options{JPath: tc.jpath})
		if err != nil {
			t.Errorf("jpath %v: %v", tc.jpath, err)
			continue
		}
		if e.Name != tc.want {
			t.Errorf("jpath %v: the spec imported %q, want %q", tc.jpath, e.Name, tc.want)
		}
	}

	// A file beside the importing file wins over every library folder.
	if err := os.WriteFile(filepath.Join(dir, "spec", "mylib.libsonnet"), []byte("{ name: 'beside' }"), 0o644); err != nil {
		t.Fatal(err)
	}
	if e, err := Compile(spec, Options{JPath: j("j1")}); err != nil || e.Name != "beside" {
		t.Errorf("beside the spec: %v %+v", err, e)
	}
	if err := os.Remove(filepath.Join(dir, "spec", "mylib.libsonnet")); err != nil {
		t.Fatal(err)
	}

	// Not found anywhere: the error names the spec's line and every folder searched.
	_, err := Compile(spec, Options{JPath: j("empty1", "empty2")})
	var ce *Error
	if !errors.As(err, &ce) || ce.File != spec || ce.Line != 2 || !strings.Contains(ce.Msg, "mylib.libsonnet") ||
		!strings.Contains(ce.Msg, filepath.Join(dir, "empty1")) || !strings.Contains(ce.Msg, filepath.Join(dir, "empty2")) {
		t.Errorf("missing library: %v", err)
	}

	// The spec itself is never looked up in library folders.
	if _, err := Compile("spec.jsonnet", Options{JPath: j("spec")}); err == nil {
		t.Error("the spec path was resolved through a library folder")
	}
}

func TestExtStrFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"spec.jsonnet": `local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({ name: std.extVar('name') + '-' + std.strReplace(ctxlab.ext('tag', 'none'), '\n', 'NL'), dataset: ctxlab.datasets.swebench('d.jsonl'),
  models: [ctxlab.models.offline], methods: [ctxlab.methods.no_source] })
`,
		"name.txt": "from-file",
		"tag.txt":  "t\n",
	})
	spec := filepath.Join(dir, "spec.jsonnet")
	e, err := Compile(spec, Options{ExtStrFile: map[string]string{"name": filepath.Join(dir, "name.txt"),
		"tag": filepath.Join(dir, "tag.txt")}})
	if err != nil {
		t.Fatal(err)
	}
	// The file's text is the string, byte for byte (a trailing newline included), and ctxlab.ext sees it too.
	if e.Name != "from-file-tNL" {
		t.Errorf("name %q", e.Name)
	}
	_, err = Compile(spec, Options{ExtStr: map[string]string{"name": "x"},
		ExtStrFile: map[string]string{"name": filepath.Join(dir, "name.txt")}})
	if err == nil || !strings.Contains(err.Error(), "both as ext-str and ext-str-file") {
		t.Errorf("a name given twice: %v", err)
	}
	missing := filepath.Join(dir, "nope.txt")
	_, err = Compile(spec, Options{ExtStrFile: map[string]string{"name": missing}})
	if err == nil || !strings.HasPrefix(err.Error(), spec+": ") || !strings.Contains(err.Error(), "ext-str-file name") ||
		!strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	_, err = Compile(spec, Options{ExtStrFile: map[string]string{"name": filepath.Join(dir, "name.txt")},
		ExtCode: map[string]string{"name": "'x'"}})
	if err == nil || !strings.Contains(err.Error(), "both as ext-str and ext-code") {
		t.Errorf("ext-str-file and ext-code of one name: %v", err)
	}
}
