package executor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
	"ctxlab/grading/testrun"
	"ctxlab/patch/diff"
)

// InstanceImage is the image of an instance under a namespace: Multi-SWE-bench's mswebench/{org}_m_{repo}:pr-{number}
// (read from its instance id, "{org}__{repo}-{number}"), else the SWE-bench harness's name (ImageName), which
// SWE-rebench's swerebench namespace shares.
func InstanceImage(namespace, instanceID string) string {
	if namespace == "mswebench" {
		if org, rest, ok := strings.Cut(instanceID, "__"); ok {
			if i := strings.LastIndex(rest, "-"); i > 0 {
				return strings.ToLower(fmt.Sprintf("mswebench/%s_m_%s:pr-%s", org, rest[:i], rest[i+1:]))
			}
		}
	}
	return ImageName(namespace, instanceID)
}

// ImageOf is the image an instance is graded in: the row's own image when it names one (SWE-rebench's
// docker_image), else InstanceImage under the namespace.
func ImageOf(namespace string, in swebench.Instance) string {
	if img := strings.TrimSpace(in.Image); img != "" {
		return img
	}
	return InstanceImage(namespace, in.InstanceID)
}

// ImageName is the harness's instance image: {namespace}/sweb.eval.x86_64.{instance id, lowercased, "__" replaced
// by "_1776_"}:latest.
func ImageName(namespace, instanceID string) string {
	if namespace == "" {
		namespace = "swebench"
	}
	id := strings.ReplaceAll(strings.ToLower(instanceID), "__", "_1776_")
	return namespace + "/sweb.eval.x86_64." + id + ":latest"
}

// Docker grades in a container of the instance's image, through the docker CLI: create (no network unless the spec
// says otherwise, no variables of this process), copy the files the model patch touches out of /testbed, apply the
// patch on this side with package diff (same ladder and path checks as Local), copy the results back, run the
// harness-shaped eval script under the timeout, and remove the container whatever happened.
type Docker struct{}

// dockerEnv is what the docker CLI itself may see: the allowlist plus the variables that locate the engine.
func dockerEnv() []string {
	var extra []string
	for _, k := range []string{"DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY"} {
		if v, ok := os.LookupEnv(k); ok {
			extra = append(extra, k+"="+v)
		}
	}
	return testrun.Env(extra)
}

// Run implements Executor. A Python grade that does not resolve and shows signs of a broken environment is
// weighed by environmentFailure against a grade of the instance without the model patch (gradeWithoutPatch).
func (d Docker) Run(ctx context.Context, r Request) (Result, error) {
	g, err := d.grade(ctx, r, true, false)
	res := g.res
	if err != nil || !res.Ran || g.lang != LangPython {
		return res, err
	}
	if g.setup.failed() {
		addNote(&res, fmt.Sprintf("the environment's setup (eval_commands and install) exited %d", g.setup.code))
	}
	return res, environmentFailure(ctx, r, res.Report, g.setup, func(ctx context.Context) (baseRun, error) {
		return d.gradeWithoutPatch(ctx, r)
	})
}

// containerGrade is one run of the eval script in a fresh container of an instance's image: its result, the
// image's language, how the setup went, and (when asked) the module names /testbed held after it.
type containerGrade struct {
	res     Result
	lang    string
	setup   setupStatus
	modules map[string]bool
}

// grade runs the eval script for r in a fresh container, the model patch applied first (withPatch), or not; the
// container is removed whatever happens. listModules lists /testbed's module names after the run.
func (Docker) grade(ctx context.Context, r Request, withPatch, listModules bool) (containerGrade, error) {
	var g containerGrade
	var paths []string
	if withPatch {
		// Paths are checked before any docker call, so an escaping patch never reaches the container.
		var err error
		if paths, err = diff.SafePaths(r.Patch); err != nil {
			g.res.Apply = diff.Report{Outcome: diff.OutcomeOf(err)}
			g.res.ApplyErr = err.Error()
			return g, nil
		}
	}
	tmp, err := TempDir()
	if err != nil {
		return g, err
	}
	defer os.RemoveAll(tmp)
	c := container{ctx: ctx, bin: r.Config.Docker}
	if c.bin == "" {
		c.bin = "docker"
	}
	defer c.remove()
	if err := c.start(r); err != nil {
		return g, err
	}
	g.lang = c.language()
	if withPatch {
		if err := c.applyPatch(r, g.lang, paths, tmp, &g.res); err != nil || g.res.ApplyErr != "" {
			return g, err
		}
	}
	plan := evalPlan(r, g.lang)
	helped := false
	if g.lang == LangPython {
		plan.Cmd, helped = withResultsHelper(plan.Cmd)
	}
	if err := c.copyEvalScript(r, plan, helped, tmp); err != nil {
		return g, err
	}
	channel, err := newChannel(tmp)
	if err != nil {
		return g, err
	}
	defer channel.Close()
	run, err := testrun.Run(ctx, testrun.Options{Dir: tmp, Timeout: r.Timeout, OutputCap: r.OutputCap,
		Heartbeat: r.Heartbeat, Command: channel.command(c.bin, c.name), Parser: testlog.ParserNone,
		ExtraEnv: dockerEnv()})
	res := &g.res
	res.Ran, res.Output, res.TimedOut, res.Duration, res.Command = true, run.Output, run.TimedOut, run.Duration,
		[]string{c.bin, "exec", c.name, "/bin/bash", "/eval.sh"}
	res.Isolation = "container"
	if err != nil {
		return g, err
	}
	if g.setup, err = readResults(res, channel, plan.Parser, helped); err != nil {
		return g, err
	}
	if listModules {
		g.modules = c.moduleNames()
	}
	return g, nil
}

// gradeWithoutPatch grades r again, in a fresh container, without the model patch: what its tests could not
// import, how its setup went, whether any of the instance's tests ran, and the module names /testbed holds.
func (d Docker) gradeWithoutPatch(ctx context.Context, r Request) (baseRun, error) {
	g, err := d.grade(ctx, r, false, true)
	if err != nil {
		return baseRun{}, fmt.Errorf("instance %s: grading without the model patch, to tell the environment's "+
			"failure from the patch's: %w", r.Instance.InstanceID, err)
	}
	return baseRun{modules: g.modules, rerun: true, missing: g.res.Report.MissingModules, setup: g.setup,
		testsRan: listedTestsRan(r.Instance, g.res.Report)}, nil
}

// start removes the containers of graders that died (SIGKILL, a lost machine), then creates and starts this one.
func (c *container) start(r Request) error {
	if _, err := RemoveStaleContainers(c.ctx, c.bin); err != nil {
		return err
	}
	image := ImageOf(r.Config.Namespace, r.Instance)
	if err := c.checkImage(r.Instance.InstanceID, image); err != nil {
		return err
	}
	if err := c.create(r, image); err != nil {
		return err
	}
	_, err := c.docker("start", c.name)
	return err
}

// applyPatch applies the model patch (its files paths copied out of /testbed into tmp) and copies the result back,
// recording in res how it applied. What the stated environment needs and the image lacks is checked before the
// patch reaches the container, and fails the grade once the patch has applied (checkEnvironment).
func (c *container) applyPatch(r Request, lang string, paths []string, tmp string, res *Result) error {
	var envErr error
	if lang == LangPython {
		var notes []string
		notes, envErr = c.checkEnvironment(r)
		addNote(res, strings.Join(notes, "; "))
	}
	tree := filepath.Join(tmp, "files") // the patched files, copied out of the container and back
	if err := c.copyOut(paths, tree); err != nil {
		return err
	}
	rep, err := diff.Apply(tree, r.Patch, diff.Options{})
	res.Apply = rep
	if err != nil {
		res.ApplyErr = err.Error()
		return nil
	}
	if envErr != nil {
		return envErr
	}
	return c.copyIn(tree, rep, dropTestFiles(r, lang, rep, res))
}

// addNote adds a note to the row's (none for an empty one).
func addNote(res *Result, note string) {
	switch {
	case note == "":
	case res.Note == "":
		res.Note = note
	default:
		res.Note += "; " + note
	}
}

// container is one grade's container, driven through the docker CLI at bin.
type container struct {
	ctx  context.Context
	bin  string
	name string // set by create
}

// docker runs the docker CLI (at most 10 minutes), its error marked with the Docker failure it shows.
func (c *container) docker(args ...string) ([]byte, error) {
	cctx, cancel := context.WithTimeout(c.ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, c.bin, args...)
	cmd.Env = dockerEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, markDocker(fmt.Errorf("docker %s: %w: %s", strings.Join(args[:min(2, len(args))], " "), err,
			bytes.TrimSpace(out)), out)
	}
	return out, nil
}

// checkImage fails when the image is not on this machine: create would try to pull it, so it is checked first and
// the row fails at once, saying what to do.
func (c *container) checkImage(instanceID, image string) error {
	_, err := c.docker("image", "inspect", "--format", "{{.Id}}", image)
	if err == nil {
		return nil
	}
	if k, _ := errkind.KindOf(err); k == errkind.DockerDaemon {
		return fmt.Errorf("instance %s: no Docker engine answers (start dockerd, or set DOCKER_HOST): %w", instanceID, err)
	}
	return errkind.Mark(errkind.DockerImage, fmt.Errorf("instance %s: image %s is not on this machine: run "+
		"`starter images pull --spec SPEC` (or --dataset FILE; `docker pull %s` for this one), or, for a dataset "+
		"that publishes no images, `starter images build` with the same flags: %w", instanceID, image, image, err))
}

// create creates the container of image, labelled with this process, on the spec's network (none by default).
func (c *container) create(r Request, image string) error {
	c.name = fmt.Sprintf("ctxlab-%s-%d", safe(r.Instance.InstanceID), time.Now().UnixNano())
	network := r.Config.Network
	if network == "" {
		network = "none"
	}
	create := append([]string{"create", "--name", c.name, "--network", network, "--init"}, ContainerLabels()...)
	_, err := c.docker(append(create, image, "tail", "-f", "/dev/null")...)
	return err
}

// remove removes the container, whatever the grade's context says; it also kills what a timed-out eval script left
// running in it. The anonymous volumes an image declares (VOLUME) go with it (-v): the tests wrote into them, and
// they would otherwise stay on the machine, full of what the patch's code put there.
func (c *container) remove() {
	if c.name == "" {
		return // none was created
	}
	rm := exec.Command(c.bin, "rm", "-f", "-v", c.name)
	rm.Env = dockerEnv()
	_, _ = rm.CombinedOutput()
}

// language is the image's, which decides the test-file rules and the default test command: Go when /testbed has a
// go.mod.
func (c *container) language() string {
	if _, err := c.docker("exec", c.name, "test", "-f", path.Join(Testbed, "go.mod")); err == nil {
		return LangGo
	}
	return LangPython
}

// copyOut copies the files at paths out of /testbed into tree, for the patch to apply to.
func (c *container) copyOut(paths []string, tree string) error {
	for _, p := range paths {
		dst := filepath.Join(tree, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		// A missing file is one the patch creates (or a conflict the applier reports).
		_, _ = c.docker("cp", c.name+":"+path.Join(Testbed, p), dst)
	}
	return os.MkdirAll(tree, 0o755)
}

// copyIn makes /testbed hold the patch's changes: the files rep deleted are removed, the ones it wrote (in tree)
// copied back, but for the dropped test files.
func (c *container) copyIn(tree string, rep diff.Report, dropped map[string]bool) error {
	for _, p := range rep.Deleted {
		if dropped[p] {
			continue
		}
		if _, err := c.docker("exec", c.name, "rm", "-f", path.Join(Testbed, p)); err != nil {
			return err
		}
	}
	for _, p := range rep.Files {
		if contains(rep.Deleted, p) || dropped[p] {
			continue
		}
		if _, err := c.docker("exec", c.name, "mkdir", "-p", path.Join(Testbed, path.Dir(p))); err != nil {
			return err
		}
		if _, err := c.docker("cp", filepath.Join(tree, filepath.FromSlash(p)), c.name+":"+path.Join(Testbed, p)); err != nil {
			return err
		}
	}
	return nil
}

// copyEvalScript writes plan's eval script (in tmp) and copies it to the container's /eval.sh; helped says the
// test command loads ctxlab's Python results helper, which the script then writes into the container.
func (c *container) copyEvalScript(r Request, plan testPlan, helped bool, tmp string) error {
	eval := Eval{BaseCommit: r.Instance.BaseCommit, TestPatch: r.Instance.TestPatch, TestCmd: plan.Cmd,
		Install: plan.Install, EvalCommands: plan.EvalCommands, ResultsHelper: helped}
	script := filepath.Join(tmp, "eval.sh")
	if err := os.WriteFile(script, []byte(eval.Script()), 0o755); err != nil {
		return err
	}
	_, err := c.docker("cp", script, c.name+":/eval.sh")
	return err
}

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '_'
	}, s)
}

var _ Executor = Docker{}

// Labels of grading containers: the machine and process of the grader, and its run (pid and process start time,
// so a reused pid is not taken for the grader that died).
const (
	labelHost = "ctxlab.host"
	labelPID  = "ctxlab.pid"
	labelRun  = "ctxlab.run"
)

// ContainerLabels are the docker create flags that label a container with this process (machine, pid, run), so
// that RemoveStaleContainers removes it once this process is gone; image builds label theirs the same way.
func ContainerLabels() []string {
	host, _ := os.Hostname()
	p := os.Getpid()
	return []string{"--label", labelHost + "=" + host, "--label", labelPID + "=" + strconv.Itoa(p),
		"--label", labelRun + "=" + runID(p)}
}

// runID names a process run: host, pid and the process's start time (clock ticks since boot, /proc/PID/stat).
func runID(pid int) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, pid, startTime(pid))
}

// startTime is field 22 of /proc/PID/stat ("" when the process is gone or /proc is missing).
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields after it follow its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// RemoveStaleContainers removes the grading containers of this machine whose grader process no longer runs (it
// was killed mid-grade, so its deferred removal never ran). It returns the names it removed.
func RemoveStaleContainers(ctx context.Context, bin string) ([]string, error) {
	if bin == "" {
		bin = "docker"
	}
	host, _ := os.Hostname()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ps := exec.CommandContext(cctx, bin, "ps", "-a", "--filter", "label="+labelHost+"="+host,
		"--format", `{{.Names}}	{{.Label "`+labelPID+`"}}	{{.Label "`+labelRun+`"}}`)
	ps.Env = dockerEnv()
	out, err := ps.Output()
	if err != nil {
		return nil, markDocker(fmt.Errorf("listing grading containers (docker ps): %w", err), out)
	}
	var removed []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil || runID(pid) == f[2] {
			continue // a live grader's (this one's included)
		}
		rm := exec.CommandContext(cctx, bin, "rm", "-f", "-v", f[0])
		rm.Env = dockerEnv()
		// Gone already, or being removed by another grader at the same time (graders run in parallel): either way
		// it goes.
		if out, err := rm.CombinedOutput(); err != nil && !strings.Contains(string(out), "No such container") &&
			!strings.Contains(string(out), "is already in progress") {
			return removed, fmt.Errorf("removing stale grading container %s: %w: %s", f[0], err, bytes.TrimSpace(out))
		}
		removed = append(removed, f[0])
	}
	return removed, nil
}
