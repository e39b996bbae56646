package cliflags

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

func TestGoStyleArgs(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("runs", "", "")
	fs.Bool("json", false, "")
	fs.StringArrayP("jpath", "J", nil, "")
	kv := KV{}
	fs.Var(kv, "ext-str", "")
	in := []string{"-runs", "out", "-json", "-ext-str", "-runs=x", "-J", "-lib", "-Jlib2", "--jpath=l3", "name",
		"--", "-runs"}
	want := []string{"--runs", "out", "--json", "--ext-str", "-runs=x", "-J", "-lib", "-Jlib2", "--jpath=l3", "name",
		"--", "-runs"}
	got := GoStyleArgs(fs, in)
	if !slices.Equal(got, want) {
		t.Fatalf("GoStyleArgs(%q)\n = %q\nwant %q", in, got, want)
	}
	if err := fs.Parse(got); err != nil {
		t.Fatal(err)
	}
	if runs, _ := fs.GetString("runs"); runs != "out" || kv["-runs"] != "x" {
		t.Errorf("runs %q, ext-str %v", runs, kv)
	}
	if j, _ := fs.GetStringArray("jpath"); !slices.Equal(j, []string{"-lib", "lib2", "l3"}) {
		t.Errorf("jpath %q", j)
	}
}

func TestKV(t *testing.T) {
	kv := KV{}
	for _, s := range []string{"b=2,3", "a=", "a=1"} {
		if err := kv.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if got := kv.String(); got != "a=1,b=2,3" {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []string{"novalue", "=v"} {
		if err := kv.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}
