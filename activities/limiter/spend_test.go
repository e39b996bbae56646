//go:build unix

package limiter

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReserveHoldsTheCap: 40 callers, each with its own SpendCap (as separate workers have), reserve $0.10 under a
// $1 cap, "call" for 20ms, append a real cost of $0.06 to a shared ledger and release. The ledger never passes the
// cap, calls did run at once, and callers stop only when even the spend alone leaves no room.
func TestReserveHoldsTheCap(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var ledger float64
	spent := func() (float64, error) { mu.Lock(); defer mu.Unlock(); return ledger, nil }
	var cur, peak atomic.Int32
	var paid, capped atomic.Int32
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := (&SpendCap{Dir: dir, Spent: spent}).Reserve(context.Background(), 1, 0.10)
			if errors.Is(err, ErrCapReached) {
				capped.Add(1)
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			n := cur.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(20 * time.Millisecond)
			cur.Add(-1)
			mu.Lock()
			ledger += 0.06
			mu.Unlock()
			paid.Add(1)
			r.Release()
		}()
	}
	wg.Wait()
	if ledger > 1+1e-9 {
		t.Errorf("ledger $%.2f passed the $1 cap", ledger)
	}
	// The last calls stop only once the spend alone leaves less than a worst case: at $0.96 (16 calls).
	if ledger < 0.9-1e-9 {
		t.Errorf("ledger $%.2f: callers gave up while the cap still had room for a call", ledger)
	}
	if peak.Load() < 2 {
		t.Errorf("peak %d calls at once; reservations must not serialize calls that fit together", peak.Load())
	}
	if int(paid.Load()+capped.Load()) != 40 {
		t.Errorf("%d paid + %d capped != 40", paid.Load(), capped.Load())
	}
}

// TestKilledReserverFreesItsReservation: a worker process that reserved $0.90 of a $1 cap and died holds nothing:
// the kernel drops its lock and the next reserver removes its file, instead of waiting for it forever.
func TestKilledReserverFreesItsReservation(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LIMITER_TEST_RESERVE="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "holding\n" {
		t.Fatalf("the reserving process said %q", line)
	}
	c := &SpendCap{Dir: dir, Spent: func() (float64, error) { return 0, nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := c.Reserve(ctx, 1, 0.5); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("while the other process holds $0.90: %v; want a wait", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	r, err := c.Reserve(context.Background(), 1, 0.5)
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	r.Release()
}

// TestSettlingBetweenReadsIsCounted: a call settles (its cost into the ledger, then its reservation released) while
// another reserver holds the cap's lock, between its two reads. Settling takes no lock, so whichever read comes
// second must be the one that can still see the settled call: CI once saw two $0.04 calls pass a $0.06 cap when the
// spend was read before the settlement and the reservations after it.
func TestSettlingBetweenReadsIsCounted(t *testing.T) {
	dir := t.TempDir()
	var ledger float64
	settle := func() {}
	spent := func() (float64, error) {
		v := ledger
		settle() // the other call settles right after this read, whichever read it is
		settle = func() {}
		return v, nil
	}
	first, err := (&SpendCap{Dir: dir, Spent: spent}).Reserve(context.Background(), 0.06, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	settle = func() { ledger += 0.04; first.Release() }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	second, err := (&SpendCap{Dir: dir, Spent: spent}).Reserve(ctx, 0.06, 0.05)
	if err == nil {
		second.Release()
		t.Fatalf("a $0.05 call was let through with $%.2f already spent under a $0.06 cap", ledger)
	}
	if !errors.Is(err, ErrCapReached) {
		t.Fatalf("got %v, want the cap reached", err)
	}
}

// TestTinyReservationsAreReadAsTheirAmount: a reservation's amount is in its file name, and a cheap call's (a few
// hundred-thousandths of a dollar) must read back as itself, not as a number that fills the cap and makes every
// other call wait until the cheap one settles.
func TestTinyReservationsAreReadAsTheirAmount(t *testing.T) {
	dir := t.TempDir()
	spent := func() (float64, error) { return 0, nil }
	held, err := (&SpendCap{Dir: dir, Spent: spent}).Reserve(context.Background(), 1, 0.00005)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r, err := (&SpendCap{Dir: dir, Spent: spent}).Reserve(ctx, 1, 0.5)
	if err != nil {
		t.Fatalf("$0.50 under a $1 cap beside a $0.00005 reservation: %v", err)
	}
	r.Release()
}
