//go:build unix

package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"ctxlab/internal/flock"
)

// SpendCap holds a run's spend cap across every worker process that shares the run folder: a call reserves its
// worst-case cost before it is sent and holds the reservation until its cost is in the ledger, so calls in flight
// at once can never together pass the cap (a check of the spend so far alone lets N calls in flight overshoot it by
// N answers).
//
// Reservations are lock files in Dir, named by their amount and held (flock) by the process that made them: the
// kernel releases a dead worker's locks, and the next reserver drops a file nobody holds, so a killed worker never
// keeps money reserved. Every look at the reservations happens under Dir's own lock, so no two reservers decide at
// once.
type SpendCap struct {
	// Dir holds the reservation files (one folder per run).
	Dir string
	// Spent returns the dollars the run's ledger (calls.jsonl) holds. A settling call appends its cost before it
	// releases its reservation, and try reads the reservations before the spend, so no cost is ever counted zero
	// times (at worst twice, for a moment: the cap errs on the side of stopping).
	Spent func() (float64, error)
}

// ErrCapReached is what Reserve returns when the call's worst case does not fit under the cap even with nothing
// else in flight: only a higher cap lets it through.
var ErrCapReached = errors.New("spend cap reached")

// CapError is the error Reserve returns when the cap is reached (errors.Is(err, ErrCapReached)).
type CapError struct {
	Spent, Reserved, Need, Cap float64
}

func (e *CapError) Error() string {
	return fmt.Sprintf("spend cap reached: $%.4f spent of $%.4f, and this call may cost up to $%.4f", e.Spent, e.Cap,
		e.Need)
}

func (e *CapError) Is(target error) bool { return target == ErrCapReached }

// Reservation is money set aside for one call until Release.
type Reservation struct {
	USD    float64
	unlock func()
	path   string
}

// Release ends the reservation. The caller appends the call's real cost to the ledger first: a released
// reservation no longer counts, and the cost must already.
func (r *Reservation) Release() {
	if r == nil || r.unlock == nil {
		return
	}
	_ = os.Remove(r.path)
	r.unlock()
	r.unlock = nil
}

// Reserve sets usd aside under capUSD. When the spend so far and the reservations of calls in flight leave no room
// but the spend so far alone would, it waits for calls in flight to settle (polling, until ctx ends); when even the
// spend so far leaves no room it fails with a *CapError at once.
func (c *SpendCap) Reserve(ctx context.Context, capUSD, usd float64) (*Reservation, error) {
	if math.IsNaN(usd) || usd < 0 {
		usd = 0
	}
	for {
		r, wait, err := c.try(capUSD, usd)
		if err != nil || !wait {
			return r, err
		}
		if err := flock.Sleep(ctx, poll+time.Duration(rand.Int64N(int64(poll)))); err != nil {
			return nil, err
		}
	}
}

// try makes one decision under the folder's lock.
func (c *SpendCap) try(capUSD, usd float64) (r *Reservation, wait bool, err error) {
	unlock, err := flock.LockPath(filepath.Join(c.Dir, "spend.lock"))
	if err != nil {
		return nil, false, fmt.Errorf("spend cap: %w", err)
	}
	defer unlock()
	// Settling takes no lock (its cost goes into the ledger, then its reservation goes), so the reservations are
	// read first: a call that settles between the two reads is then seen in the spend, and one that settles before
	// is in both (counted twice for a moment: the cap errs on the side of stopping). Read the other way round, it
	// would be in neither.
	reserved, err := c.reserved()
	if err != nil {
		return nil, false, err
	}
	spent, err := c.Spent()
	if err != nil {
		return nil, false, err
	}
	switch {
	case spent+usd > capUSD:
		return nil, false, &CapError{Spent: spent, Reserved: reserved, Need: usd, Cap: capUSD}
	case spent+reserved+usd > capUSD:
		return nil, true, nil
	}
	// 'f', never 'g': an amount written with an exponent ("5e-05") would read back after its last '-' as 5 dollars.
	name := fmt.Sprintf("r-%d-%016x-%s.lock", os.Getpid(), rand.Uint64(), strconv.FormatFloat(usd, 'f', -1, 64))
	path := filepath.Join(c.Dir, name)
	runlock, held, err := flock.TryLock(path)
	if err != nil || held {
		return nil, false, fmt.Errorf("spend cap: reserving %s: %v (held %v)", path, err, held)
	}
	return &Reservation{USD: usd, unlock: runlock, path: path}, false, nil
}

// reserved sums the reservations held now, removing those whose holder died.
func (c *SpendCap) reserved() (float64, error) {
	entries, err := os.ReadDir(c.Dir)
	if err != nil {
		return 0, fmt.Errorf("spend cap: %w", err)
	}
	var sum float64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "r-") || !strings.HasSuffix(name, ".lock") {
			continue
		}
		usd, perr := strconv.ParseFloat(name[strings.LastIndexByte(name, '-')+1:len(name)-len(".lock")], 64)
		path := filepath.Join(c.Dir, name)
		unlock, held, err := flock.TryLock(path)
		if err != nil {
			return 0, fmt.Errorf("spend cap: %w", err)
		}
		if !held { // its holder is gone (or released it between remove and unlock): no money is set aside
			_ = os.Remove(path)
			unlock()
			continue
		}
		if perr == nil && usd > 0 && !math.IsInf(usd, 0) {
			sum += usd
		}
	}
	return sum, nil
}
