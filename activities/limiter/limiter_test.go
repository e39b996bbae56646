//go:build unix

package limiter

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMain lets the test binary act as another worker process holding a slot (see TestKilledHolderFreesSlot).
func TestMain(m *testing.M) {
	if dir := os.Getenv("LIMITER_TEST_HOLD"); dir != "" {
		if _, err := New(dir, Limits{InFlight: 1}).Acquire(context.Background()); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("holding\n")
		time.Sleep(time.Hour)
	}
	if dir := os.Getenv("LIMITER_TEST_RESERVE"); dir != "" {
		c := &SpendCap{Dir: dir, Spent: func() (float64, error) { return 0, nil }}
		if _, err := c.Reserve(context.Background(), 1, 0.9); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("holding\n")
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

// TestInFlightBound: callers with their own limiters (as separate workers have) never run more than InFlight calls
// at once, and they do use all the slots.
func TestInFlightBound(t *testing.T) {
	dir := t.TempDir()
	var cur, peak atomic.Int32
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := New(dir, Limits{InFlight: 3}).Acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(30 * time.Millisecond)
			cur.Add(-1)
			release()
		}()
	}
	wg.Wait()
	if p := peak.Load(); p != 3 {
		t.Errorf("peak in flight %d, want 3", p)
	}
}

// TestRateSpacesStarts: starts are spaced 1/RPS apart across limiters sharing the folder.
func TestRateSpacesStarts(t *testing.T) {
	dir := t.TempDir()
	const n, rps = 6, 20.0
	var mu sync.Mutex
	var starts []time.Time
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := New(dir, Limits{RPS: rps}).Acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			release()
		}()
	}
	wg.Wait()
	first, last := starts[0], starts[0]
	for _, s := range starts {
		if s.Before(first) {
			first = s
		}
		if s.After(last) {
			last = s
		}
	}
	// n starts at 20/s span at least (n-1)/20 s. A start is timed after Acquire returns, and on a loaded machine the
	// first goroutine can be descheduled before it reads the clock, so one interval of slack (unlimited starts would
	// span a few milliseconds).
	if span := last.Sub(first); span < time.Duration(float64(n-2)/rps*float64(time.Second)) {
		t.Errorf("%d starts within %v: faster than %v per second", n, span, rps)
	}
}

// TestKilledHolderFreesSlot: a worker killed while holding the only slot does not keep it.
func TestKilledHolderFreesSlot(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LIMITER_TEST_HOLD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	l := New(dir, Limits{InFlight: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	if _, err := l.Acquire(ctx); err == nil {
		t.Fatal("acquired the slot another process holds")
	}
	cancel()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	release, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("slot not freed by the killed holder: %v", err)
	}
	release()
	if _, err := os.Stat(filepath.Join(dir, "slot-0.lock")); err != nil {
		t.Error(err)
	}
}
