package machines

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMachinesShareOnlyWhatTheyAreGiven: two machines write the same path of their run folder and of /tmp; each
// reads back its own file, the host sees neither, and a shared folder inside a private one is the host's on both.
func TestMachinesShareOnlyWhatTheyAreGiven(t *testing.T) {
	Require(t)
	runs := t.TempDir()
	shared := filepath.Join(runs, "store")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(name string) string {
		m := Machine{Name: name, Private: []string{runs}, Shared: []string{shared}}
		cmd := Command(ctx, m, "sh", "-c", `echo `+name+` > "$1/mine"; echo `+name+` > /tmp/mine; echo `+name+
			` >> "$2/seen"; sleep 0.5; cat "$1/mine" /tmp/mine; hostname; ls "$1"`, "sh", runs, shared)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return string(out)
	}
	done := make(chan string, 1)
	go func() { done <- run("machine-b") }()
	a := run("machine-a")
	b := <-done
	if a != "machine-a\nmachine-a\nmachine-a\nmine\nstore\n" {
		t.Errorf("machine a read:\n%s", a)
	}
	if b != "machine-b\nmachine-b\nmachine-b\nmine\nstore\n" {
		t.Errorf("machine b read:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(runs, "mine")); err == nil {
		t.Error("a machine's private file reached the host")
	}
	if seen, _ := os.ReadFile(filepath.Join(shared, "seen")); strings.Count(string(seen), "machine-") != 2 {
		t.Errorf("the shared folder holds %q, want both machines' lines", seen)
	}
	if host, _ := exec.Command("hostname").Output(); strings.Contains(string(host), "machine-") {
		t.Errorf("a machine renamed the host: %s", host)
	}
	// The machines stage in a tmpfs of their own namespaces: the host's folder under it stays empty.
	if left, _ := filepath.Glob("/run/ctxlab-machines/*"); len(left) > 0 {
		t.Errorf("staging folders left on the host: %v", left)
	}
}

// TestPathSeesIntoAMachine: a test outside every machine reads a machine's private file through Path.
func TestPathSeesIntoAMachine(t *testing.T) {
	Require(t)
	runs := t.TempDir()
	cmd := Command(context.Background(), Machine{Name: "m", Private: []string{runs}}, "sh", "-c",
		`echo inside > "$1/f"; sleep 30`, "sh", runs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	p := Path(cmd.Process.Pid, filepath.Join(runs, "f"))
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(p); err == nil && string(b) == "inside\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never read the machine's file", p)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(runs, "f")); err == nil {
		t.Error("the machine's file is on the host")
	}
}
