package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
)

// fullDiskScript runs in a private mount namespace with a 64 MB tmpfs at $D (a real filesystem that really fills):
// first a starter on it with 8 MB left, then one whose disk is filled while its sweep runs, then, with the filler
// gone, a plain re-run. Each phase leaves its exit code and stderr in the folder given as $OUT.
const fullDiskScript = `set -u
mount -t tmpfs -o size=64m tmpfs "$D" || exit 97
dd if=/dev/zero of="$D/filler" bs=1024 count=57344 2>/dev/null
timeout 120 "$STARTER" run "$SPEC" --runs "$D/runs" > /dev/null 2> "$OUT/start.err"; echo $? > "$OUT/start.code"
rm -f "$D/filler"; rm -rf "$D/runs"
"$STARTER" run "$SPEC" --runs "$D/runs" > /dev/null 2> "$OUT/mid.err" &
pid=$!
while [ ! -s "$D/runs/$NAME/attempts.jsonl" ] && kill -0 $pid 2>/dev/null; do sleep 0.1; done
dd if=/dev/zero of="$D/filler" bs=65536 2>/dev/null
wait $pid; echo $? > "$OUT/mid.code"
rm -f "$D/filler"
timeout 300 "$STARTER" run "$SPEC" --runs "$D/runs" > /dev/null 2> "$OUT/rerun.err"; echo $? > "$OUT/rerun.code"
cp "$D/runs/$NAME/results.jsonl" "$OUT/results.jsonl"
`

// TestFullDiskNamedAndRepaired (issue 28, item 6): a run folder on a full disk is named as such (ENOSPC, how much is
// free, what to do) at the start, within seconds, and when the disk fills mid-sweep the starter stops saying so,
// instead of the embedded server failing every write ("something went wrong, please retry", "context deadline
// exceeded") while the starter hangs. Once space is freed, a plain re-run completes the sweep: every row once and
// none with an error.
func TestFullDiskNamedAndRepaired(t *testing.T) {
	t.Parallel()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("no unshare (util-linux) to make a private tmpfs: %v", err)
	}
	args := []string{"--mount", "--propagation", "private"}
	if os.Geteuid() != 0 {
		args = append([]string{"--user", "--map-root-user"}, args...)
	}
	name := "fulldisk"
	spec := demoVariant(t, "{ name: '"+name+"', dataset+: { limit: 3 }, "+referenceMethods+" }")
	d, out := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, append(args, "sh", "-c", fullDiskScript)...)
	cmd.Env = append(starter(ctx, t).Env, "D="+d, "OUT="+out, "STARTER="+os.Args[0], "SPEC="+spec, "NAME="+name)
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the script: %v\n%s", err, b)
	}
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		return strings.TrimSpace(string(b))
	}
	code := func(phase string) int {
		n, err := strconv.Atoi(read(phase + ".code"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if c, stderr := code("start"), read("start.err"); c != exitFail || !strings.Contains(stderr, "no space left on device (ENOSPC)") ||
		!strings.Contains(stderr, "MB free") {
		t.Errorf("a start with 8 MB free: exit %d, want %d naming ENOSPC and the space left:\n%s", c, exitFail, stderr)
	}
	if c, stderr := code("mid"), read("mid.err"); c != exitFail ||
		!strings.Contains(stderr, "the sweep stops: no space left on device (ENOSPC)") {
		t.Errorf("a disk filled mid-sweep: exit %d, want %d saying the disk is full:\n%s", c, exitFail, lastLines(stderr, 15))
	}
	if c, stderr := code("rerun"), read("rerun.err"); c != exitOK {
		t.Errorf("the re-run with space: exit %d, want 0:\n%s", c, lastLines(stderr, 15))
	}
	rows, bad, err := results.ReadFile(filepath.Join(out, "results.jsonl"))
	if err != nil || len(bad) > 0 {
		t.Fatalf("results: %v, %d torn lines", err, len(bad))
	}
	seen := map[results.Key]int{}
	for _, r := range rows {
		seen[r.Key()]++
		if r[results.FieldError] != nil {
			t.Errorf("row %v: %v (%s)", r.Key(), r[results.FieldError], results.ErrorKind(r))
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("row %v appears %d times", k, n)
		}
	}
	if len(seen) != 3*2 {
		t.Errorf("%d rows, want 3 instances x 2 methods", len(seen))
	}
	t.Logf("the three phases took %s", time.Since(start).Round(time.Second))
}

// lastLines is the end of a long stderr.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
