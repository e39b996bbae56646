package grading

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"ctxlab/activities/api/errkind"
	"ctxlab/grading/executor"
	"ctxlab/grading/testlog"
	"ctxlab/patch/diff"
)

// The decide stage: a run's status from its verdict (testlog.DecideInstance, the harness's rule on the listed tests)
// and what else the run showed, SWE-bench 5.0's rejections among them, and whose failure a build failure is.

// The grade statuses (grade_status on the row).
const (
	StatusResolved     = "resolved"
	StatusUnresolved   = "unresolved"    // tests ran; some listed test did not pass
	StatusEmptyPatch   = "empty_patch"   // nothing to apply: never resolved
	StatusMalformed    = "malformed"     // the model's text is not a patch: never resolved
	StatusPatchFailed  = "patch_failed"  // the model patch does not apply, or leaves the worktree
	StatusTimeout      = "timeout"       // the tests ran past the grading timeout and were killed
	StatusTestsMissing = "tests_missing" // the run produced no result for some listed test
	StatusBuildFailed  = "build_failed"  // some listed test has no result and a package's tests did not build
	// StatusNameMismatch: no listed test has a result, nothing failed to build, and the run did report tests (or
	// the runner found none of the names declared): the dataset's names do not match what the runner reports.
	StatusNameMismatch = "tests_name_mismatch"
	// SWE-bench 5.0's rejections (HarnessRule), which come before its 4.x resolution rule (get_resolution_status).
	// StatusNoTests: the run reported no test at all (and no package failed to build): nothing was graded, so
	// nothing resolves, not even an instance whose FAIL_TO_PASS and PASS_TO_PASS are empty.
	StatusNoTests = "no_tests_collected"
	// StatusExitCodeMismatch: the test command exited non-zero, yet no test failed (and no build did): the results
	// disagree with the runner, as when printed lines forge passes. A run it rejects does not resolve.
	StatusExitCodeMismatch = "exit_code_mismatch"
)

// allIn reports whether every name of names is in set.
func allIn(names, set []string) bool {
	for _, n := range names {
		if !slices.Contains(set, n) {
			return false
		}
	}
	return true
}

// runStatus is one run's status. A build failure explains missing tests before anything else does; when no listed
// test has a result although the run reported others (or the runner found none of the names declared), the names
// are at fault, not the patch; a run that reported no test at all is rejected (SWE-bench 5.0), and so is a
// resolved one whose exit code contradicts its results.
func runStatus(res executor.Result, v testlog.Verdict) string {
	rep := res.Report
	noneRan := len(v.Missing) > 0 && len(v.Passed)+len(v.Failed)+len(v.Skipped) == 0
	switch {
	case res.TimedOut:
		return StatusTimeout
	case v.Resolved:
		if rule := HarnessRule(res); rule != "" {
			return rule
		}
		return StatusResolved
	case len(v.Missing) > 0 && len(rep.BuildFailed) > 0:
		return StatusBuildFailed
	case noneRan && (len(rep.Tests) > 0 || allIn(v.Missing, rep.NotDeclared)):
		return StatusNameMismatch
	case HarnessRule(res) == StatusNoTests:
		return StatusNoTests
	case len(v.Missing) > 0 && len(v.Failed) == 0 && len(v.Skipped) == 0 && len(v.Regressed) == 0:
		return StatusTestsMissing
	default:
		return StatusUnresolved
	}
}

// moduleDownloadFailure is the machine's failure hidden behind a build failure: the module requirements could not be
// downloaded (no proxy reachable, no network), so the packages that need them did not build. The builds run offline
// (GOPROXY=off) once the download is done, so the go command's own words for it in a failed build's output name
// a module of the build list that the build needed and the module cache lacked (modulesDownloaded), whatever the
// download printed, or whether it ran at all. It is the machine's only when the model patch changed
// none of the files that say what to download (go.mod, go.sum, go.work, vendor/): otherwise the patch asked for
// what could not be had, and the build failure is its result. (A patch importing a package of a module the build
// list lacks gets "cannot find module providing package", never a download: its build failure stays the patch's.)
func moduleDownloadFailure(r Request, res executor.Result) error {
	missing := modulesDownloaded(res.Report.BuildOutput)
	if len(missing) == 0 {
		missing = modulesDownloaded(eventText(res.Output)) // beyond BuildOutput's cap
	}
	if len(missing) == 0 {
		return nil
	}
	paths, _ := diff.ChangedFiles(r.Patch)
	for _, p := range paths {
		if base := path.Base(p); base == "go.mod" || base == "go.sum" || base == "go.work" || base == "go.work.sum" ||
			strings.HasPrefix(p, "vendor/") {
			return nil
		}
	}
	named := strings.Join(missing[:min(len(missing), 3)], ", ")
	if len(missing) > 3 {
		named += fmt.Sprintf(" and %d more", len(missing)-3)
	}
	// The go command's own output stays in the test log: it names the proxy, whose URL may carry credentials.
	return errkind.Mark(errkind.ModuleDownload, fmt.Errorf("instance %s: the Go module requirements could not be "+
		"downloaded (the offline build still needed %s; see the test log), so %d package(s) did not build: make the "+
		"module proxy reachable or set grading.goproxy, then run again", r.Instance.InstanceID, named,
		len(res.Report.BuildFailed)))
}

// eventText is the text of a Go run's log: the Output of each go test -json event, a line that is none as it is.
func eventText(log []byte) string {
	var b strings.Builder
	for _, line := range bytes.Split(log, []byte("\n")) {
		var ev struct{ Output *string }
		if json.Unmarshal(line, &ev) == nil && ev.Output != nil {
			b.WriteString(*ev.Output)
		} else {
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// modulesDownloaded are the modules ("path version") that the go command's output says the build needed and the
// module cache lacked, in order, once each: "go: downloading <path> <version>" (modfetch's line for a module the
// cache lacks, go 1.17 and later), or, for a go.mod of go 1.16 or before, "<path>@<version>: module lookup disabled
// by GOPROXY=off" (its go.mod not in the cache) or "<path>@<version>: verifying module: ..." (its checksum neither in
// go.sum nor verifiable offline: an older module that came without go.sum). A package no module of the build list
// provides ("cannot find module providing package") names none.
func modulesDownloaded(out string) []string {
	var mods []string
	add := func(m string) {
		if !slices.Contains(mods, m) {
			mods = append(mods, m)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "go: ")
		if rest, ok := strings.CutPrefix(line, "downloading "); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				add(f[0] + " " + f[1])
			}
			continue
		}
		mod, why, ok := strings.Cut(line, ": ")
		p, v, isMod := strings.Cut(mod, "@")
		if ok && isMod && p != "" && v != "" && !strings.ContainsAny(mod, " \t") &&
			(strings.HasPrefix(why, "module lookup disabled") || strings.HasPrefix(why, "verifying module:")) {
			add(p + " " + v)
		}
	}
	return mods
}

// HarnessRule returns the SWE-bench 5.0 rule a run's result breaks ("" for none): a run whose results count zero
// tests is rejected (StatusNoTests), and so is one whose test command's recorded exit code is non-zero while
// no result failed (StatusExitCodeMismatch; only where the exit code is the runner's own record,
// res.ExitCodeKnown).
// Where the rules come from, and how far they can be cited, is in docs/grading.md ("SWE-bench 5.0").
func HarnessRule(res executor.Result) string {
	rep := res.Report
	if len(rep.Tests) == 0 && len(rep.BuildFailed) == 0 {
		return StatusNoTests
	}
	if res.ExitCodeKnown && res.ExitCode != 0 && !recordsFailure(rep) {
		return StatusExitCodeMismatch
	}
	return ""
}

// recordsFailure says whether a report holds a failure: a failed or errored result, or a package that did not build.
func recordsFailure(rep testlog.Report) bool {
	if len(rep.BuildFailed) > 0 {
		return true
	}
	for _, rs := range rep.Tests {
		for _, r := range rs {
			if r.Status == testlog.StatusFail {
				return true
			}
		}
	}
	return false
}
