//go:build unix

package llm

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// onThreadCPU runs f on one locked OS thread and returns the CPU time that thread spent: unlike wall time, it does
// not grow when other processes on a loaded machine take the cores, so two sizes measured one after the other
// compare the work, not the machine's load.
func onThreadCPU(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Timespec
	start := time.Now()
	err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &before)
	f()
	if err != nil || unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &after) != nil {
		return time.Since(start) // no thread clock here: wall time, which a loaded machine stretches
	}
	return time.Duration(after.Nano() - before.Nano())
}
