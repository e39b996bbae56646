package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/starter/exitcode"
	"ctxlab/store/cas"
)

func TestStatusAuditErrors(t *testing.T) {
	runs := t.TempDir()
	var out, errb bytes.Buffer
	if code := Main([]string{"status", "missing", "--runs", runs}, &out, &errb); code == 0 ||
		!strings.Contains(errb.String(), filepath.Join(runs, "missing")) {
		t.Errorf("status of a missing run: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	if code := Main([]string{"audit", "--runs", runs, "--show", "sha256:abc"}, &out, &errb); code != exitcode.Usage ||
		!strings.Contains(errb.String(), "not a reference") {
		t.Errorf("audit --show of a bad ref: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	ref := cas.RefOf([]byte("nothing"))
	if code := Main([]string{"audit", "--runs", runs, "--show", string(ref)}, &out, &errb); code == 0 ||
		!strings.Contains(errb.String(), "is not in the content store") {
		t.Errorf("audit --show of an unknown ref: exit %d, %s", code, errb.String())
	}
}
