package jsonnet

import (
	"fmt"
	"runtime/metrics"
	"time"

	gojsonnet "github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"
)

// A spec is code, and a hostile or broken one must not hang or exhaust the machine that compiles it (starter
// compile, check and run, the worker): its evaluation is bounded in time, in memory and in the JSON it makes, and
// its recursion by go-jsonnet's stack limit (500 frames) and by the Go stack it grows. go-jsonnet cannot stop an evaluation, so one that breaks a
// limit is abandoned: Compile returns the error at once, and the command exits on it.
const (
	// DefaultTimeout bounds a spec's evaluation (the paper's spec takes well under a second).
	DefaultTimeout = time.Minute
	// DefaultMaxMemory bounds how much the heap may grow while a spec is evaluated.
	DefaultMaxMemory = 2 << 30
	// MaxOutputBytes bounds the JSON a spec evaluates to (the paper's is under a megabyte).
	MaxOutputBytes = 64 << 20
	// MaxImportBytes bounds a file a spec imports.
	MaxImportBytes = 64 << 20
	// MaxStackBytes bounds the goroutine stacks an evaluation grows: go-jsonnet counts no frames for tailstrict
	// calls, so an endless tailstrict recursion passes its stack limit and would overflow Go's (a fatal error, not
	// an error to report, after a gigabyte of stack).
	MaxStackBytes = 256 << 20
)

// memoryPoll is how often the heap is looked at during an evaluation.
const memoryPoll = 10 * time.Millisecond

// evaluate evaluates node within opts' limits (DefaultTimeout and DefaultMaxMemory when not set), returning the
// spec's JSON; a limit broken is an *Error naming it.
func evaluate(vm *gojsonnet.VM, node ast.Node, path string, opts Options) (string, error) {
	timeout, maxMemory := opts.Timeout, opts.MaxMemory
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if maxMemory <= 0 {
		maxMemory = DefaultMaxMemory
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	baseHeap, baseStacks := memoryInUse()
	go func() {
		out, err := vm.Evaluate(node)
		done <- result{out, err}
	}()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(memoryPoll)
	defer poll.Stop()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				return "", evalError(vm, path, r.err)
			}
			if len(r.out) > MaxOutputBytes {
				return "", &Error{File: path, Msg: fmt.Sprintf("the spec evaluates to more than %d MiB of JSON (%d "+
					"MiB): an experiment is far smaller", MaxOutputBytes>>20, len(r.out)>>20)}
			}
			return r.out, nil
		case <-deadline.C:
			return "", &Error{File: path, Msg: fmt.Sprintf("evaluating the spec took longer than %s: does it loop "+
				"forever?", timeout)}
		case <-poll.C:
			heap, stacks := memoryInUse()
			if int64(stacks)-int64(baseStacks) > MaxStackBytes {
				return "", &Error{File: path, Msg: fmt.Sprintf("evaluating the spec recursed past %d MiB of stack: "+
					"does a function call itself forever?", MaxStackBytes>>20)}
			}
			if int64(heap)-int64(baseHeap) > maxMemory {
				return "", &Error{File: path, Msg: fmt.Sprintf("evaluating the spec took more than %d MiB of memory: "+
					"does it build something endless?", maxMemory>>20)}
			}
		}
	}
}

// memoryInUse is what the heap's objects hold, live or not yet collected, and what goroutine stacks hold (read
// without stopping the world).
func memoryInUse() (heap, stacks uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}
