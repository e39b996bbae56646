package executor

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"ctxlab/grading/testlog"
)

// readResults fills in res's exit code and report: from the channel when the test command loaded the results
// helper (helped), else from the log between the markers, read with parser. It returns the setup's status.
func readResults(res *Result, channel *resultsChannel, parser string, helped bool) (setupStatus, error) {
	records, err := channel.read()
	if err != nil {
		return setupStatus{}, err
	}
	res.ExitCode, res.ExitCodeKnown = records.exitCode, records.exitKnown
	if helped {
		var note string
		res.Report, note, err = helperReport(parser, records.results)
		addNote(res, note)
		return records.setup, err
	}
	section, ok := Between(string(res.Output))
	if !ok {
		addNote(res, "the test-output markers are missing from the log: no test counts as run")
		res.Report = testlog.Report{Tests: map[string][]testlog.TestResult{}}
		return records.setup, nil
	}
	res.Report, err = testlog.Parse(parser, strings.NewReader(section))
	return records.setup, err
}

// The results channel of a docker grade: a file of the grade's folder, on this side, created before the run and
// held open, into which the docker CLI writes what the eval script writes to its stdout (the container's descriptor
// 3: the helper's results and the script's record of the exit code), capped at channelCap bytes. The container
// never sees the file; the log is the CLI's stderr.
type resultsChannel struct {
	path string
	f    *os.File
}

const channelCap = 64 << 20

func newChannel(tmp string) (*resultsChannel, error) {
	p := filepath.Join(tmp, "channel")
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("docker results channel: %w", err)
	}
	w.Close()
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("docker results channel: %w", err)
	}
	return &resultsChannel{path: p, f: f}, nil
}

func (ch *resultsChannel) Close() error { return ch.f.Close() }

// command runs the eval script in the container, its stdout appended to the channel (capped) and its stderr left as
// the command's output.
func (ch *resultsChannel) command(bin, name string) []string {
	return []string{"/bin/sh", "-c", `"$0" exec "$1" /bin/bash /eval.sh | head -c ` + strconv.Itoa(channelCap) +
		` >>"$2"`, bin, name, ch.path}
}

// channelRecords are what a channel held: the helper's result lines, the test command's exit code when the
// script recorded one (the last record counts: the script writes it after the tests), and the setup's status (the
// first record counts: the script writes it before the tests).
type channelRecords struct {
	results   string
	exitCode  int
	exitKnown bool
	setup     setupStatus
}

func (ch *resultsChannel) read() (channelRecords, error) {
	var rec channelRecords
	b, err := io.ReadAll(io.LimitReader(ch.f, channelCap+1))
	if err != nil {
		return rec, fmt.Errorf("docker results channel: %w", err)
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		if code, ok := strings.CutPrefix(line, "ctxlab1\texit\t"); ok {
			if n, err := strconv.Atoi(code); err == nil {
				rec.exitCode, rec.exitKnown = n, true
			}
			continue
		}
		if code, ok := strings.CutPrefix(line, "ctxlab1\tinstall\t"); ok {
			if n, err := strconv.Atoi(code); err == nil && !rec.setup.known {
				rec.setup = setupStatus{code: n, known: true}
			}
			continue
		}
		if line != "" {
			keep = append(keep, line)
		}
	}
	rec.results = strings.Join(keep, "\n")
	return rec, nil
}

// noteHelperNeverStarted is the row's note for a run whose results helper never started.
const noteHelperNeverStarted = "the test runner never started ctxlab's results plugin, so no result was read " +
	"(results are never read from the output)"

// helperReport reads the helper's results: under a harness parser as the -rA summary lines they stand for
// (testlog.HarnessSummary), so names and statuses follow the harness's rules, else as ctxlab's local runner reads
// them (testlog.ParseResults).
func helperReport(parser, results string) (testlog.Report, string, error) {
	if p, ok := testlog.HarnessParser(parser); ok {
		summary, started, pytestOnly, err := testlog.HarnessSummary(strings.NewReader(results))
		if err != nil {
			return testlog.Report{}, "", err
		}
		if pytestOnly {
			if !started {
				return testlog.Report{Tests: map[string][]testlog.TestResult{}}, noteHelperNeverStarted, nil
			}
			rep, err := testlog.ParseHarness(p, strings.NewReader(summary))
			return rep, "", err
		}
	}
	rep, started, err := testlog.ParseResults(strings.NewReader(results))
	if !started {
		return testlog.Report{Tests: map[string][]testlog.TestResult{}}, noteHelperNeverStarted, err
	}
	return rep, "", err
}
