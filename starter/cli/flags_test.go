package cli

import (
	"bytes"
	"ctxlab/starter/exitcode"
	"slices"
	"strings"
	"testing"
)

// Long flags take one dash or two, as Go's flag package took them, and a flag's value is never read as a flag.
func TestParseSingleDashLongFlags(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseStatus([]string{"-runs", "out", "n", "-json"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.Runs != "out" || !o.JSON || o.Name != "n" {
		t.Errorf("status -runs out n -json: parsed %+v", o)
	}
	r, err := parseRun([]string{"-ext-str", "-runs=x", "s.jsonnet", "-J", "-lib", "-Jlib2", "--jpath=lib3",
		"-infra-waits=-1"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if r.ExtStr["-runs"] != "x" || r.Runs != "runs" {
		t.Errorf("--ext-str -runs=x: ext %v, runs %q (a flag's value was read as a flag)", r.ExtStr, r.Runs)
	}
	if want := []string{"-lib", "lib2", "lib3"}; !slices.Equal(r.JPath, want) {
		t.Errorf("jpath %q, want %q", r.JPath, want)
	}
	if r.Spec != "s.jsonnet" || r.InfraWaits != -1 {
		t.Errorf("spec %q, infra-waits %d", r.Spec, r.InfraWaits)
	}
	if _, err := parseStatus([]string{"-rns", "out", "n"}, &stderr); err == nil {
		t.Error("an unknown single-dash flag was accepted")
	}
}

// Help writes flags as the README does (--name), and leaves out the flags that exist for tests only.
func TestHelpListsDoubleDashFlagsWithoutTestOnes(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"run", "-h"}, &out, &errb); code != exitcode.OK {
		t.Fatalf("run -h: exit %d", code)
	}
	help := out.String() + errb.String()
	for _, want := range []string{"usage: starter run SPEC", "      --runs string", "      --allow-errors",
		"  -J, --jpath DIR"} {
		if !strings.Contains(help, want) {
			t.Errorf("run -h lacks %q:\n%s", want, help)
		}
	}
	for _, hidden := range testOnlyFlags {
		if strings.Contains(help, hidden) {
			t.Errorf("run -h lists the test-only flag --%s", hidden)
		}
	}
	if strings.Contains(help, "(default [])") {
		t.Errorf("run -h prints empty list defaults:\n%s", help)
	}
}

func TestMainExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		want int
	}{
		{nil, exitcode.Usage},
		{[]string{"-h"}, exitcode.OK},
		{[]string{"--help"}, exitcode.OK},
		{[]string{"frobnicate"}, exitcode.Usage},
		{[]string{"status", "--bogus", "n"}, exitcode.Usage},
		{[]string{"status"}, exitcode.Usage},
		{[]string{"status", "--help"}, exitcode.OK},
		{[]string{"images"}, exitcode.Usage},
		{[]string{"images", "build", "-h"}, exitcode.OK},
		{[]string{"help", "report"}, exitcode.OK},
		{[]string{"help", "nope"}, exitcode.Usage},
		{[]string{"completion", "bash"}, exitcode.OK},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		if code := Main(tc.args, &out, &errb); code != tc.want {
			t.Errorf("starter %q: exit %d, want %d (stderr %q)", tc.args, code, tc.want, errb.String())
		}
	}
}

// The completion script is generated, and the completion of a command's flags lists its flags but not the
// test-only ones.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		var out, errb bytes.Buffer
		code := Main([]string{"completion", shell}, &out, &errb)
		if code != exitcode.OK || !strings.Contains(out.String(), "starter") {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", shell, code, out.Len(), errb.String())
		}
	}
	complete := func(args ...string) []string {
		var out, errb bytes.Buffer
		if code := Main(append([]string{"__complete"}, args...), &out, &errb); code != exitcode.OK {
			t.Fatalf("__complete %q: exit %d: %s", args, code, errb.String())
		}
		var words []string
		for _, line := range strings.Split(out.String(), "\n") {
			if line != "" && !strings.HasPrefix(line, ":") {
				word, _, _ := strings.Cut(line, "\t")
				words = append(words, word)
			}
		}
		return words
	}
	if got := complete("sta"); !slices.Equal(got, []string{"status"}) {
		t.Errorf("sta<TAB> = %q, want status", got)
	}
	if got := complete("run", "s.jsonnet", "--ext-str"); !slices.Contains(got, "--ext-str-file") {
		t.Errorf("run s.jsonnet --ext-str<TAB> = %q, want --ext-str-file among them", got)
	}
	if got := complete("images", "build", "--reb"); !slices.Equal(got, []string{"--rebuild"}) {
		t.Errorf("images build --reb<TAB> = %q", got)
	}
	if got := complete("run", "--"); !slices.Contains(got, "--runs") || slices.Contains(got, "--infra-waits") {
		t.Errorf("run --<TAB> = %q: want --runs, not --infra-waits", got)
	}
}

// A switch is written in help as the docs write it (--json, not --json[=true|false]) and still takes a value.
func TestSwitchFlags(t *testing.T) {
	for _, cmd := range [][]string{{"run"}, {"status"}, {"audit"}, {"grade"}, {"images", "build"}} {
		var out, errb bytes.Buffer
		if code := Main(append(slices.Clone(cmd), "--help"), &out, &errb); code != exitcode.OK {
			t.Fatalf("%v --help: exit %d", cmd, code)
		}
		if strings.Contains(out.String(), "[=true|false]") || !strings.Contains(out.String(), "\n  -h, --help ") {
			t.Errorf("%v --help:\n%s", cmd, out.String())
		}
	}
	var stderr bytes.Buffer
	for _, tc := range []struct {
		args []string
		want bool
	}{{[]string{"n", "--json"}, true}, {[]string{"--json=false", "n"}, false}, {[]string{"n"}, false}} {
		o, err := parseStatus(tc.args, &stderr)
		if err != nil || o.JSON != tc.want || o.Name != "n" {
			t.Errorf("status %q: json %v, name %q, %v; want json %v", tc.args, o.JSON, o.Name, err, tc.want)
		}
	}
}

func TestParseRunClusterFlags(t *testing.T) {
	t.Setenv("CTXLAB_STORE", "file:///from/env")
	var stderr bytes.Buffer
	o, err := parseRun([]string{"s.jsonnet", "--address", "t.example:7233", "--namespace", "ns", "--tls-cert", "c.pem",
		"--tls-key", "k.pem", "--tls-ca", "ca.pem", "--tls-server-name", "t.example", "--api-key-env", "MY_KEY",
		"--no-worker"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	c := o.Cluster
	if c.Address != "t.example:7233" || c.Namespace != "ns" || c.CertFile != "c.pem" || c.KeyFile != "k.pem" ||
		c.CAFile != "ca.pem" || c.ServerName != "t.example" || c.APIKeyEnv != "MY_KEY" || !o.NoWorker {
		t.Errorf("parsed %+v", o)
	}
	if o.Store != "file:///from/env" {
		t.Errorf("store %q, want CTXLAB_STORE's value", o.Store)
	}
	o, err = parseRun([]string{"s.jsonnet", "--store", "s3://b?region=x"}, &stderr)
	if err != nil || o.Store != "s3://b?region=x" || o.Cluster.Address != "" || o.Cluster.APIKeyEnv != "TEMPORAL_API_KEY" {
		t.Errorf("parsed %+v, %v", o, err)
	}
}
