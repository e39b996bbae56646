package sweepclient

import (
	"bytes"
	"ctxlab/starter/exitcode"
	"encoding/json"
	"strings"
	"testing"
)

func TestAuditSelectsAnIssue(t *testing.T) {
	runs, _ := twoIssueRun(t)
	var out, errb bytes.Buffer
	if code := Audit(AuditOptions{Name: "two", Runs: runs, Issue: "i2", JSON: true}, &out, &errb); code != exitcode.OK {
		t.Fatalf("audit --issue i2: exit %d\n%s", code, errb.String())
	}
	var rep AuditReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Activities) != 1 || rep.Activities[0].Instance != "i2" || rep.Totals.Tries["done"] != 1 {
		t.Errorf("audit --issue i2: %+v", rep)
	}
	out.Reset()
	if code := Audit(AuditOptions{Name: "two", Runs: runs}, &out, &errb); code != exitcode.OK ||
		!strings.Contains(out.String(), "i1") || !strings.Contains(out.String(), "i2") {
		t.Errorf("audit: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

func TestAuditRefusals(t *testing.T) {
	runs, dir := twoIssueRun(t)
	for _, tc := range []struct {
		o    AuditOptions
		code int
		want string
	}{
		{AuditOptions{Name: "two", Runs: runs, Issue: "i9"}, exitcode.Fail,
			`starter audit: issue "i9" has no records in ` + dir},
		{AuditOptions{Name: "two", Runs: runs, Method: "m"}, exitcode.Fail,
			"starter audit: --method needs the run's spec (no spec recorded"},
		{AuditOptions{Name: "gone", Runs: runs}, exitcode.Fail, "starter audit: no run folder"},
		{AuditOptions{Runs: runs, Show: "sha256:nothex"}, exitcode.Usage, "is not a reference"},
	} {
		var out, errb bytes.Buffer
		if code := Audit(tc.o, &out, &errb); code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("audit %+v: exit %d, stderr %q; want exit %d and %q", tc.o, code, errb.String(), tc.code, tc.want)
		}
	}
}
