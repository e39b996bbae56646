package testrun

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/grading/sandbox"
	"ctxlab/testkit/filetree"
)

// Building reads what the model wrote: cgo sources and their #include lines, files an assembler .incbin-s, Go
// assembly #includes, a go.mod replacement naming any folder. With isolation the download and the build read them
// as the sandbox's uid, so a file only root may read reaches neither the build error (grade_build_error) nor the
// test log; without isolation, as root, the same modules leak it, which is what lets this test fail.
func TestBuildCannotReadRootOnlyFiles(t *testing.T) {
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox here (%s)", why)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the files are root's")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatalf("the cgo attacks need a C compiler (scripts/test installs gcc): %v", err)
	}
	t.Parallel()
	secret := fmt.Sprintf("CTXLAB_ROOT_ONLY_%d", time.Now().UnixNano())
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(private, "secret.h")
	filetree.Write(t, private, map[string]string{
		"secret.h": secret + " leaked;\n",
		// go mod download reads the replacement's requirements and names them when it cannot find them.
		"replaced/go.mod": "module example.com/x\n\nrequire " + secret + " v1.0.0\n",
		"replaced/x.go":   "package x\n",
	})
	if err := os.Chmod(secretFile, 0o600); err != nil {
		t.Fatal(err)
	}
	proxy := "file://" + filepath.ToSlash(t.TempDir())
	const plainTest = "package m\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n"
	type attack struct {
		name  string
		reads string // the file it makes the build read
		files map[string]string
	}
	cases := []attack{
		{"cgo #include", secretFile, map[string]string{
			"m.go":      "package m\n\n// #include \"" + secretFile + "\"\nimport \"C\"\n",
			"m_test.go": plainTest,
		}},
		{"cgo .incbin", secretFile, map[string]string{
			"m.go": "package m\n\n// extern char leak;\nimport \"C\"\n\nfunc Leak() string { return C.GoString(&C.leak) }\n",
			"leak.S": ".section .data\n.globl leak\nleak:\n.incbin \"" + secretFile + "\"\n.byte 0\n" +
				".section .note.GNU-stack,\"\",@progbits\n",
			"m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { t.Log(Leak()) }\n",
		}},
		{"Go assembly #include", secretFile, map[string]string{
			"m.go":      "package m\n\nfunc F()\n",
			"m_amd64.s": "#include \"" + secretFile + "\"\n",
			"m_test.go": plainTest,
		}},
		{"go.mod replacement", filepath.Join(private, "replaced"), map[string]string{
			"go.mod":    "module example.com/m\n\ngo 1.21\n\nrequire example.com/x v1.0.0\n\nreplace example.com/x => " + filepath.Join(private, "replaced") + "\n",
			"go.sum":    "example.com/x v1.0.0/go.mod h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
			"m.go":      "package m\n\nimport _ \"example.com/x\"\n",
			"m_test.go": plainTest,
		}},
	}
	if fi, err := os.Stat("/etc/shadow"); err == nil && fi.Mode().Perm()&0o004 == 0 {
		// A real root-only file of the machine, outside every folder the sandbox hides.
		cases = append(cases, attack{"cgo #include /etc/shadow", "/etc/shadow", map[string]string{
			"m.go":      "package m\n\n// #include \"/etc/shadow\"\nimport \"C\"\n",
			"m_test.go": plainTest,
		}})
	}
	shadowLine := ""
	if b, err := os.ReadFile("/etc/shadow"); err == nil {
		shadowLine, _, _ = strings.Cut(string(b), "\n")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, isolate := range []bool{false, true} {
				dir := module(t, c.files)
				modCache := t.TempDir()
				cleanModCache(t, modCache)
				res := run(t, Options{Dir: dir, Tests: []string{"TestX"}, Isolate: isolate, GoProxy: proxy,
					ExtraEnv: []string{"CGO_ENABLED=1", "GOMODCACHE=" + modCache}})
				all := append(append([]byte{}, res.Output...), res.Report.BuildOutput...)
				leaked := bytes.Contains(all, []byte(secret)) ||
					(strings.Contains(c.name, "shadow") && shadowLine != "" && bytes.Contains(all, []byte(shadowLine)))
				if !isolate {
					if !leaked {
						t.Fatalf("built as root the file must leak, or this test shows nothing:\n%s", all)
					}
					continue
				}
				if leaked {
					t.Errorf("a root-only file reached the grade's output:\n%s", all)
				}
				if res.Isolation != sandbox.IsolationNamespaces || !bytes.Contains(all, []byte(c.reads)) {
					t.Errorf("isolation %q: want the read refused, naming the file\n%s", res.Isolation, all)
				}
			}
		})
	}
}
