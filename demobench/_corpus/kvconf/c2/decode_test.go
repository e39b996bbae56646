package kvconf

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

type serverConfig struct {
	Host    string        `kv:"host,required"`
	Port    int           `kv:"port"`
	Timeout time.Duration `kv:"timeout"`
	Debug   bool
	Tags    []string `kv:"tags"`
	Ignored string   `kv:"-"`
}

func TestDecodeSection(t *testing.T) {
	f := mustParse(t, "[server]\nhost = example.com\nport = 8080\ntimeout = 1m30s\ndebug = true\ntags = a, b,, c\n")
	var c serverConfig
	if err := Decode(f.Section("server"), &c); err != nil {
		t.Fatal(err)
	}
	want := serverConfig{Host: "example.com", Port: 8080, Timeout: 90 * time.Second, Debug: true, Tags: []string{"a", "b", "c"}}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v, want %+v", c, want)
	}
}

func TestDecodeErrors(t *testing.T) {
	f := mustParse(t, "[server]\nport = eighty\n")
	var c serverConfig
	err := Decode(f.Section("server"), &c)
	if err == nil || !strings.Contains(err.Error(), "required key \"host\"") {
		t.Fatalf("got %v", err)
	}
	f = mustParse(t, "[server]\nhost = h\nport = eighty\n")
	if err := Decode(f.Section("server"), &c); err == nil || !strings.Contains(err.Error(), "not a valid integer") {
		t.Fatalf("got %v", err)
	}
}

func TestExpandEnv(t *testing.T) {
	f := mustParse(t, "[db]\nurl = postgres://${DB_USER}@${DB_HOST:-localhost}/app\nprice = $$5\n")
	env := map[string]string{"DB_USER": "app"}
	ExpandEnv(f, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if got, _ := f.Get("db", "url"); got != "postgres://app@localhost/app" {
		t.Errorf("url = %q", got)
	}
	if got, _ := f.Get("db", "price"); got != "$5" {
		t.Errorf("price = %q", got)
	}
}
