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
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &before) != nil {
		start := time.Now()
		f()
		return time.Since(start)
	}
	f()
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &after) != nil {
		return 0
	}
	return time.Duration(after.Nano() - before.Nano())
}
