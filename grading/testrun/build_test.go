package testrun

import (
	"context"
	"debug/elf"
	"io"
	"runtime"
	"testing"
)

// Test binaries are linked as go test links the binaries it runs: without symbol table and DWARF, which makes the
// link, most of a small package's build, a third or more shorter.
func TestTestBinaryOmitsDebugInfo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the binary as ELF")
	}
	t.Setenv("GOFLAGS", "")
	dir := module(t, map[string]string{"m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\n"})
	events := &eventWriter{w: io.Discard, pkg: "example.com/m"}
	layout, err := ReadGoLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := newGoRun(context.Background(), Options{Dir: dir, ExtraEnv: []string{"CGO_ENABLED=0"}}, layout, events)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	bin := g.buildAll(context.Background(), []*goPackage{{importPath: "example.com/m", dir: ".", mod: &layout.Modules[0]}})[0]
	if bin == "" {
		t.Fatal("the test binary did not build")
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Name == ".symtab" || s.Name == ".debug_info" || s.Name == ".zdebug_info" {
			t.Errorf("the test binary has a %s section", s.Name)
		}
	}

	// A worker's own -ldflags are left alone.
	t.Setenv("GOFLAGS", "-ldflags=-X=main.v=1")
	if f := omitDebug(); f != nil {
		t.Errorf("with GOFLAGS -ldflags: %q, want none", f)
	}
}
