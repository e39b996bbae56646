package activities

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/activities/repo"
	"ctxlab/activities/steps"
	"ctxlab/grading"
	"ctxlab/patch/diff"
	"ctxlab/store/cas"
	"ctxlab/testkit/demorun"
)

// typeOf is the type of an activity's failure and whether Temporal retries it.
func typeOf(t *testing.T, err error) (string, bool) {
	t.Helper()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		t.Fatalf("error %v (%T) is not an application error", err, err)
	}
	return app.Type(), !app.NonRetryable()
}

// wantStepKind checks that a step failed with the kind, the class following from it, and the retryability the kind
// has; the message must name what it names (the instance, the missing piece).
func wantStepKind(t *testing.T, err error, want errkind.Kind, names ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the step succeeded; want a %s failure", want)
	}
	typ, retryable := typeOf(t, err)
	if typ != string(want) || retryable != want.Retryable() {
		t.Errorf("failure type %q (retryable %v), want %s (retryable %v): %v", typ, retryable, want,
			want.Retryable(), err)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("the error does not name %q: %v", n, err)
		}
	}
}

// instanceOf returns the id of the fixture's first instance of a demo repository.
func (f *fixture) instanceOf(repoName string) string {
	f.T.Helper()
	for id, r := range f.Rows {
		if strings.HasSuffix(r.Repo, "/"+repoName) {
			return id
		}
	}
	f.T.Fatalf("no instance of repository %s in the demo", repoName)
	return ""
}

// TestStepErrorKinds: every failure a step can raise leaves it with a kind. An error marked where it happened keeps
// its mark, a system error under it says a full disk or a refused permission, anything else is the machine's
// (step_failed, retried as untyped errors were); errors that already have a type keep it. Before, every one of
// these reached the row with no kind and was filed as the model's failure, final.
func TestStepErrorKinds(t *testing.T) {
	enospc := &fs.PathError{Op: "write", Path: "/runs/x/cas/ab/cd", Err: syscall.ENOSPC}
	for name, c := range map[string]struct {
		err  error
		want errkind.Kind
	}{
		"marked":            {fmt.Errorf("instance a: %w", errkind.Mark(errkind.MissingRunner, errors.New("no python3"))), errkind.MissingRunner},
		"disk full":         {fmt.Errorf("storing the log: %w", enospc), errkind.DiskFull},
		"quota":             {&fs.PathError{Op: "write", Path: "f", Err: syscall.EDQUOT}, errkind.DiskFull},
		"permission":        {&fs.PathError{Op: "open", Path: "f", Err: syscall.EACCES}, errkind.Permission},
		"read-only":         {&fs.PathError{Op: "open", Path: "f", Err: syscall.EROFS}, errkind.Permission},
		"anything else":     {errors.New("cas: object sha256:00 not found"), errkind.StepFailed},
		"mark beats errno":  {errkind.Mark(errkind.Sandbox, enospc), errkind.Sandbox},
		"innermost mark":    {errkind.Mark(errkind.StepFailed, errkind.Mark(errkind.DockerDaemon, errors.New("x"))), errkind.DockerDaemon},
		"spend cap (typed)": {steps.Permanent(api.ErrSpendLimit, "cap"), ""},
		"bad input (typed)": {steps.Permanent(api.ErrBadInput, "bad"), ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := stepError("m.grade", c.err)
			if c.want == "" {
				if got != c.err {
					t.Errorf("a typed error was changed: %v", got)
				}
				return
			}
			wantStepKind(t, activityError(got), c.want, "m.grade: ", c.err.Error())
		})
	}
	if err := stepError("m.grade", context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("cancellation became %v", err)
	}
}

// enospcStore fails every write as a full disk does.
type enospcStore struct{ cas.Store }

func (enospcStore) Put(context.Context, []byte) (cas.Ref, error) {
	return "", &fs.PathError{Op: "write", Path: "cas/tmp-1", Err: syscall.ENOSPC}
}

// TestCheckoutFailuresAreTheMachines: a repository that is not there and a full disk under the snapshot are each
// named, with their kind; none is the model's (a base_commit the repository lacks: TestCheckoutUnknownCommitNamesInstance).
func TestCheckoutFailuresAreTheMachines(t *testing.T) {
	t.Run("no repository", func(t *testing.T) {
		f := newFixture(t)
		f.Dataset.Repos = filepath.Join(t.TempDir(), "nowhere", "{repo}")
		_, err := f.Node("checkout", demorun.Instance, nil, nil)
		wantStepKind(t, err, errkind.RepoUnavailable, demorun.Instance, "nowhere")
	})
	t.Run("disk full", func(t *testing.T) {
		f := newFixture(t)
		f.useStore(enospcStore{mustStore(t, f.a)})
		_, err := f.Node("checkout", demorun.Instance, nil, nil)
		wantStepKind(t, err, errkind.DiskFull, demorun.Instance, "no space left on device")
	})
}

// TestGradeFailuresOfTheMachine: grading on a machine that lacks the interpreter, the Go toolchain or the module
// proxy, or a snapshot with a symbolic link leading out, fails the step with the environment's kind, naming what is
// missing; a patch that itself changes the module files still gets its build failure as a result.
func TestGradeFailuresOfTheMachine(t *testing.T) {
	f := newFixture(t)
	store := mustStore(t, f.a)
	put := func(text string) api.NodeOutput {
		ref, err := store.Put(context.Background(), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return api.NodeOutput{Ref: ref}
	}
	grade := func(id string, co api.NodeOutput, patch string, settings map[string]any) (api.NodeOutput, error) {
		settings["executor"] = "local"
		return f.Node("grade", id, map[string]any{"grading": settings}, map[string]api.NodeOutput{"checkout": co,
			"patch": put(patch)})
	}

	py := f.instanceOf("tablefmt")
	pyCo := f.Must(f.Node("checkout", py, nil, nil))
	_, err := grade(py, pyCo, f.Rows[py].Patch, map[string]any{"python": filepath.Join(t.TempDir(), "python3")})
	wantStepKind(t, err, errkind.MissingRunner, py, "python3")

	goInst := f.instanceOf("humanize")
	goCo := f.Must(f.Node("checkout", goInst, nil, nil))
	t.Run("no go command", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := grade(goInst, goCo, f.Rows[goInst].Patch, map[string]any{})
		wantStepKind(t, err, errkind.Toolchain, goInst, "Go toolchain")
	})

	t.Run("module proxy unreachable", func(t *testing.T) {
		// Module caches that hold none of relnotes' requirements: the worker's (GOMODCACHE, which the download
		// would ask first) and the graded runs' own, under the user cache folder, where an earlier grade of relnotes
		// on this machine (the gold test, starter grade, the demo) leaves them downloaded. That one must be
		// reachable by the sandbox's uid, which downloads into it.
		t.Setenv("GOMODCACHE", t.TempDir())
		t.Setenv("GOFLAGS", "-modcacherw")
		t.Setenv("XDG_CACHE_HOME", reachableTempDir(t))
		dep := f.instanceOf("relnotes")
		co := f.Must(f.Node("checkout", dep, nil, nil))
		// A proxy folder that is not there, and a proxy server that refuses connections (a port just closed), where
		// go mod download itself fails: each leaves the offline build without relnotes' requirement.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		refused := "http://" + l.Addr().String()
		l.Close()
		for _, url := range []string{refused, "file://" + filepath.Join(t.TempDir(), "no-proxy")} {
			_, err := grade(dep, co, f.Rows[dep].Patch, map[string]any{"goproxy": url})
			wantStepKind(t, err, errkind.ModuleDownload, dep, "could not be downloaded")
			if err == nil || !strings.Contains(err.Error(), "example.org/textwrap v1.3.0") {
				t.Errorf("proxy %s: %v; want the missing module named", url, err)
			}
		}
		proxy := map[string]any{"goproxy": "file://" + filepath.Join(t.TempDir(), "no-proxy")}

		// The same failure under a patch that edits go.mod is the patch's doing: a graded row, build_failed.
		entry, ok := f.Manifest(co).Lookup("go.mod")
		if !ok {
			t.Fatal("no go.mod in the snapshot")
		}
		goMod, err := store.Get(context.Background(), entry.Blob)
		if err != nil {
			t.Fatal(err)
		}
		edit := diff.Unified("go.mod", goMod, append(append([]byte{}, goMod...), "// edited\n"...))
		out, err := grade(dep, co, f.Rows[dep].Patch+edit, map[string]any{"goproxy": proxy["goproxy"]})
		if err != nil || out.Row["grade_status"] != grading.StatusBuildFailed {
			t.Errorf("a patch editing go.mod: %v, %v; want the row's grade_status build_failed", out.Row, err)
		}
	})

	t.Run("symlink out of the tree", func(t *testing.T) {
		m := f.Manifest(goCo)
		target, err := store.Put(context.Background(), []byte("../../../../etc"))
		if err != nil {
			t.Fatal(err)
		}
		m.Files = append(m.Files, repo.Entry{Path: "zz-escape", Mode: repo.ModeSymlink, Blob: target, Size: 15})
		ref, err := cas.PutJSON(context.Background(), store, m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = grade(goInst, api.NodeOutput{Ref: ref}, f.Rows[goInst].Patch, map[string]any{})
		wantStepKind(t, err, errkind.SymlinkRefused, goInst, "zz-escape")
	})
}

// reachableTempDir is a fresh temporary folder that other uids (the sandbox's) may search: t.TempDir's are 0700.
func reachableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
