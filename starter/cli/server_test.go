package cli

import (
	"bytes"
	"ctxlab/starter/exitcode"
	"strings"
	"testing"
)

func TestParseServer(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseServer([]string{"--db", "postgres://u@127.0.0.1:5432/t", "--address", "127.0.0.1:7000",
		"--namespace", "ctxlab", "--log", "s.log"}, &stderr)
	if err != nil || o.db != "postgres://u@127.0.0.1:5432/t" || o.address != "127.0.0.1:7000" ||
		o.namespace != "ctxlab" || o.logFile != "s.log" {
		t.Errorf("parsed %+v, %v", o, err)
	}
	if _, err := parseServer(nil, &stderr); err == nil || !strings.Contains(err.Error(), "--db is required") {
		t.Errorf("no --db: %v", err)
	}
	if _, err := parseServer([]string{"--db", "postgres://u@h/t", "extra"}, &stderr); err == nil {
		t.Error("a stray argument was accepted")
	}
	// A database URL the server cannot use fails before anything starts, without echoing the password.
	var out bytes.Buffer
	if code := Main([]string{"server", "--db", "mysql://u:hunter2@h/t", "--log", ""}, &out, &out); code != exitcode.Fail ||
		!strings.Contains(out.String(), "want postgres://") || strings.Contains(out.String(), "hunter2") {
		t.Errorf("server on a mysql URL: exit %d\n%s", code, out.String())
	}
	out.Reset()
	Main([]string{"help"}, &out, &out)
	if !strings.Contains(out.String(), "server --db postgres://") {
		t.Errorf("the usage does not list the server command:\n%s", out.String())
	}
}
