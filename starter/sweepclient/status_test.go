package sweepclient

import (
	"bytes"
	"ctxlab/starter/exitcode"
	"encoding/json"
	"strings"
	"testing"
)

func TestStatusOfFinishedRun(t *testing.T) {
	runs, dir := twoIssueRun(t)
	var out, errb bytes.Buffer
	if code := Status(StatusOptions{Name: "two", Runs: runs}, &out, &errb); code != exitcode.OK {
		t.Fatalf("status: exit %d\n%s", code, errb.String())
	}
	for _, want := range []string{"run two (" + dir + "): 2 issues x 1 methods", "state:     finished",
		"issues:    1 done, 1 failed, 0 running, 0 pending", "errors:    1 rows: endpoint 1 (timeout 1",
		"no server to ask the run's budget workflow", "eta:       - (finished)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := Status(StatusOptions{Name: "two", Runs: runs, JSON: true}, &out, &errb); code != exitcode.OK {
		t.Fatalf("status --json: exit %d\n%s", code, errb.String())
	}
	var rep struct {
		Run          string                    `json:"run"`
		ErrorClasses map[string]map[string]int `json:"error_classes"`
		Stopped      bool                      `json:"stopped"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Run != "two" ||
		rep.ErrorClasses["endpoint"]["timeout"] != 1 || rep.Stopped {
		t.Errorf("status --json: %+v, %v\n%s", rep, err, out.String())
	}
}

func TestStatusOfMissingRunFails(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Status(StatusOptions{Name: "gone", Runs: t.TempDir()}, &out, &errb); code != exitcode.Fail ||
		!strings.HasPrefix(errb.String(), "starter status: no run folder") {
		t.Errorf("status of no run: exit %d, stderr %q", code, errb.String())
	}
}
