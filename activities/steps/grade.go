package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/activities/executor"
	"ctxlab/activities/repo"
	"ctxlab/activities/testlog"
	"ctxlab/dataset/swebench"
	"ctxlab/patch/diff"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

func init() { registerStep(specs.Grade, gradeStep) }

// gradeStep statuses recorded on the row.
const (
	GradeResolved     = "resolved"
	GradeUnresolved   = "unresolved"    // tests ran; some listed test did not pass
	GradeEmptyPatch   = "empty_patch"   // nothing to apply: never resolved
	GradeBadPatch     = "malformed"     // the model's text is not a patch: never resolved
	GradePatchFailed  = "patch_failed"  // the model patch does not apply, or leaves the worktree
	GradeTimeout      = "timeout"       // the tests ran past the grading timeout and were killed
	GradeTestsMissing = "tests_missing" // the run produced no result for some listed test
	GradeBuildFailed  = "build_failed"  // some listed test has no result and a package's tests did not build
	// GradeNameMismatch: no listed test has a result, nothing failed to build, and the run did report tests (or the
	// runner found none of the names declared): the dataset's names do not match what the runner reports.
	GradeNameMismatch = "tests_name_mismatch"
	// GradeNoTests and GradeExitCodeMismatch are SWE-bench 5.0's rejections (executor.HarnessRule).
	GradeNoTests          = executor.NoTestsCollected
	GradeExitCodeMismatch = executor.ExitCodeMismatch
)

// DefaultGradeTimeout is the per-run timeout when a spec sets none.
const DefaultGradeTimeout = 30 * time.Minute

// Grade applies the test patch and the model patch to a fresh worktree at base_commit, runs FAIL_TO_PASS and
// PASS_TO_PASS with the spec's executor, and decides resolved from the per-test results, never from the exit code.
// Its output is the test log; its row fields say how the patch applied and how every run went.
func gradeStep(ctx context.Context, j *job, p specs.GradeParams) (api.NodeOutput, error) {
	exec, err := j.newExecutor(p.Grading.Executor)
	if err != nil {
		return api.NodeOutput{}, permanent(api.ErrUnsupported, err)
	}
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	pin, err := j.input("patch")
	if err != nil {
		return api.NodeOutput{}, err
	}
	patch, err := j.store.Get(ctx, pin.Ref)
	if err != nil {
		return api.NodeOutput{}, err
	}
	cleanStaleOnce(j.env.Log)
	if p.Grading.GoProxy, err = j.goProxy(ctx, p.Grading.GoProxy); err != nil {
		return api.NodeOutput{}, err
	}
	if p.Grading.PythonWheels, err = j.pythonWheels(ctx, p.Grading.PythonWheels); err != nil {
		return api.NodeOutput{}, err
	}
	req := GradeRequest{Instance: inst, Patch: string(patch), PatchRef: pin.Ref,
		Grading: p.Grading, Materialize: func(ctx context.Context, dir string) error {
			return repo.Materialize(ctx, j.store, m, dir)
		}, Heartbeat: j.env.Heartbeat}
	// Byte-identical patches of the instance under the same settings are graded once (gradememo.go).
	out, err := j.gradeOnce(ctx, p, req, func() (api.NodeOutput, error) { return GradePatch(ctx, exec, j.store, req) })
	if errors.Is(err, executor.ErrTestPatch) {
		return out, permanent(api.ErrBadInput, err)
	}
	// Named once: some executor errors name the instance already, others do not.
	if err != nil && !strings.HasPrefix(err.Error(), "instance "+inst.InstanceID+":") {
		err = fmt.Errorf("instance %s: %w", inst.InstanceID, err)
	}
	return out, err
}

// goProxy is the GOPROXY setting with {dataset_dir} replaced and each file:// folder made the absolute folder it is
// on this machine (a proxy folder the starter shipped is unpacked from the store), whatever folder the spec named
// the dataset from.
func (j *job) goProxy(ctx context.Context, setting string) (string, error) {
	setting = strings.ReplaceAll(setting, "{dataset_dir}", filepath.Dir(j.in.Dataset.File))
	var b strings.Builder
	for setting != "" {
		end := strings.IndexAny(setting, ",|")
		if end < 0 {
			end = len(setting)
		}
		entry := setting[:end]
		if folder, ok := strings.CutPrefix(entry, "file://"); ok {
			local, err := j.env.localPath(ctx, folder)
			if err != nil {
				return "", fmt.Errorf("grading.goproxy: %w", err)
			}
			abs, err := filepath.Abs(local)
			if err != nil {
				return "", err
			}
			entry = "file://" + filepath.ToSlash(abs)
		}
		b.WriteString(entry)
		b.WriteString(setting[end:min(end+1, len(setting))]) // the separator, as given
		setting = setting[min(end+1, len(setting)):]
	}
	return b.String(), nil
}

// pythonWheels is the grading.python_wheels setting on this machine: a package index URL as given, a folder of wheels
// ({dataset_dir} filled in) where the starter shipped it (Env.Shipped), made absolute.
func (j *job) pythonWheels(ctx context.Context, setting string) (string, error) {
	if setting == "" || strings.Contains(setting, "://") {
		return setting, nil
	}
	local, err := j.env.localPath(ctx, strings.ReplaceAll(setting, "{dataset_dir}", filepath.Dir(j.in.Dataset.File)))
	if err != nil {
		return "", fmt.Errorf("grading.python_wheels: %w", err)
	}
	return filepath.Abs(local)
}

var staleOnce sync.Once

// cleanStaleOnce removes, once per process, grading folders left by killed processes.
func cleanStaleOnce(log zerolog.Logger) {
	staleOnce.Do(func() {
		if n, err := executor.CleanStale(""); err != nil {
			log.Warn().Err(err).Msg("cleaning stale grading folders")
		} else if n > 0 {
			log.Info().Int("removed", n).Msg("removed grading folders of killed processes")
		}
	})
}

// GradeRequest is one patch to grade.
type GradeRequest struct {
	Instance swebench.Instance
	Patch    string
	// PatchRef is recorded on the row (patch_ref), so predictions can be exported from the rows.
	PatchRef    cas.Ref
	Grading     specs.Grading
	Materialize func(ctx context.Context, dir string) error
	// Heartbeat, if set, is called while the tests run (Env.Heartbeat).
	Heartbeat func()
}

// ExecutorConfig is the executors' part of a spec's grading section.
func ExecutorConfig(g specs.Grading) executor.Config {
	return executor.Config{TestCmd: g.TestCmd.All, TestCmds: g.TestCmd.By, ModelTests: g.ModelTests, Tests: g.Tests,
		LogParser: g.LogParser, Python: g.Python, Namespace: g.Namespace, Network: g.Network, Docker: g.Docker,
		GoProxy: g.GoProxy, Isolation: g.Isolation, InstallConfig: g.InstallConfig, PythonWheels: g.PythonWheels}
}

// GradePatch grades one patch: the grade step's work, for `starter grade` too. It runs the
// executor once, and again up to Grading.Reruns times while the patch applied but did not resolve (the flake guard);
// resolved then needs a majority of the runs. The output holds the stored log of every run and the row fields.
func GradePatch(ctx context.Context, exec executor.Executor, store cas.Store, r GradeRequest) (api.NodeOutput, error) {
	row := map[string]any{}
	specs.Resolved.Set(row, false)
	specs.GradeExecutor.Set(row, r.Grading.Executor)
	if r.PatchRef != "" {
		specs.PatchRef.Set(row, string(r.PatchRef))
	}
	timeout := r.Grading.Timeout.D()
	if timeout <= 0 {
		timeout = DefaultGradeTimeout
	}
	req := executor.Request{Instance: r.Instance, Patch: r.Patch, Materialize: r.Materialize, Timeout: timeout,
		Config: ExecutorConfig(r.Grading), Heartbeat: r.Heartbeat}

	var logs strings.Builder
	var statuses []string
	resolvedRuns := 0
	var last testlog.Verdict
	var lastReport testlog.Report
	for attempt := 0; attempt <= max(r.Grading.Reruns, 0); attempt++ {
		res, err := exec.Run(ctx, req)
		if err != nil {
			return api.NodeOutput{}, err
		}
		if attempt == 0 {
			recordApply(row, res)
			if !res.Ran {
				return api.NodeOutput{Row: row}, nil
			}
		}
		v := executor.Decide(r.Instance, res.Report)
		status := runStatus(res, v)
		if status == GradeBuildFailed {
			if err := moduleDownloadFailure(r, res); err != nil {
				return api.NodeOutput{}, err
			}
		}
		statuses = append(statuses, status)
		if status == GradeResolved {
			resolvedRuns++
		}
		last, lastReport = v, res.Report
		fmt.Fprintf(&logs, "===== ctxlab grade run %d of instance %s: %s (%s, %.1fs) =====\n", attempt+1,
			r.Instance.InstanceID, status, strings.Join(res.Command, " "), res.Duration.Seconds())
		logs.Write(res.Output)
		if !strings.HasSuffix(logs.String(), "\n") {
			logs.WriteByte('\n')
		}
		if res.Note != "" {
			specs.GradeNote.Set(row, res.Note)
		}
		if res.Isolation != "" {
			specs.GradeIsolation.Set(row, res.Isolation)
		}
		specs.GradeSeconds.Set(row, res.Duration.Seconds())
		if res.ExitCodeKnown {
			specs.GradeExitCode.Set(row, res.ExitCode)
		}
		if status == GradeResolved && attempt == 0 {
			break // only failing grades are re-run; once re-run, every rerun counts
		}
	}
	logRef, err := store.Put(ctx, []byte(logs.String()))
	if err != nil {
		return api.NodeOutput{}, err
	}
	recordVerdict(row, statuses, resolvedRuns, last, lastReport)
	return api.NodeOutput{Ref: logRef, Row: row}, nil
}

// recordVerdict puts the runs' verdict on the row: resolved by a majority of the runs, the status, and for an
// unresolved patch the tests at fault in the last run.
func recordVerdict(row map[string]any, statuses []string, resolvedRuns int, last testlog.Verdict,
	lastReport testlog.Report) {
	resolved := 2*resolvedRuns > len(statuses)
	specs.Resolved.Set(row, resolved)
	status := statuses[0]
	if resolved {
		status = GradeResolved
	} else if statuses[0] == GradeResolved {
		status = GradeUnresolved
	}
	specs.GradeStatus.Set(row, status)
	if len(statuses) > 1 {
		specs.GradeRuns.Set(row, statuses)
		specs.GradeFlaky.Set(row, resolvedRuns > 0 && resolvedRuns < len(statuses))
	}
	if resolved {
		if len(last.Skipped) > 0 {
			// Resolved with listed tests that counted neither way (the harness's rule): the row says which.
			specs.TestsSkipped.Set(row, last.Skipped)
		}
		return
	}
	switch status {
	case GradeBuildFailed:
		specs.GradeBuildError.Set(row, headOf(lastReport.BuildOutput, maxBuildError))
	case GradeNameMismatch:
		specs.GradeNote.Set(row, "the dataset's test names do not match what the test runner reports: none of the "+
			"FAIL_TO_PASS/PASS_TO_PASS names has a result")
	}
	specs.TestsFailed.Set(row, last.Failed)
	specs.TestsMissing.Set(row, last.Missing)
	specs.TestsSkipped.Set(row, last.Skipped)
	if len(last.Regressed) > 0 {
		specs.TestsRegressed.Set(row, last.Regressed)
	}
}

// recordApply puts how the model patch applied on the row.
func recordApply(row map[string]any, res executor.Result) {
	rep := res.Apply
	specs.PatchApply.Set(row, string(rep.Outcome))
	if rep.Stage != "" {
		specs.PatchApplyStage.Set(row, rep.Stage)
	}
	fuzzed := 0
	for _, h := range rep.Shifted {
		if h.Fuzz > 0 {
			fuzzed++
		}
	}
	if len(rep.Shifted) > 0 {
		specs.PatchHunksShifted.Set(row, len(rep.Shifted))
		specs.PatchHunksFuzzed.Set(row, fuzzed)
	}
	if len(rep.Rejected) > 0 {
		reasons := make([]string, len(rep.Rejected))
		for i, h := range rep.Rejected {
			reasons[i] = h.Reason
		}
		specs.PatchRejected.Set(row, reasons)
	}
	// The model's changes to test files that were reset before the tests ran, and those it kept (model_tests keep).
	if len(res.TestFilesDropped) > 0 {
		specs.PatchTestFilesDropped.Set(row, res.TestFilesDropped)
	}
	if len(res.ModelTestFiles) > 0 {
		specs.PatchTestFilesKept.Set(row, res.ModelTestFiles)
	}
	if res.Ran {
		return
	}
	specs.GradeError.Set(row, res.ApplyErr)
	switch rep.Outcome {
	case diff.Empty:
		specs.GradeStatus.Set(row, GradeEmptyPatch)
	case diff.Malformed:
		specs.GradeStatus.Set(row, GradeBadPatch)
	default:
		specs.GradeStatus.Set(row, GradePatchFailed)
	}
}

// allIn reports whether every name of names is in set.
func allIn(names, set []string) bool {
	for _, n := range names {
		if !slices.Contains(set, n) {
			return false
		}
	}
	return true
}

// maxBuildError bounds grade_build_error on the row.
const maxBuildError = 2 << 10

// headOf returns the first whole lines of s that fit in n bytes (a cut line when the first one is longer).
func headOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[:n]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i+1]
	}
	return cut + "[...]\n"
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
		return GradeTimeout
	case v.Resolved:
		if rule := executor.HarnessRule(res); rule != "" {
			return rule
		}
		return GradeResolved
	case len(v.Missing) > 0 && len(rep.BuildFailed) > 0:
		return GradeBuildFailed
	case noneRan && (len(rep.Tests) > 0 || allIn(v.Missing, rep.NotDeclared)):
		return GradeNameMismatch
	case executor.HarnessRule(res) == GradeNoTests:
		return GradeNoTests
	case len(v.Missing) > 0 && len(v.Failed) == 0 && len(v.Skipped) == 0 && len(v.Regressed) == 0:
		return GradeTestsMissing
	default:
		return GradeUnresolved
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
func moduleDownloadFailure(r GradeRequest, res executor.Result) error {
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
