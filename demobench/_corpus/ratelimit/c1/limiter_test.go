package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestLimiterAllowN(t *testing.T) {
	clk := NewFakeClock(t0)
	l := New(5, 10, WithClock(clk))
	if !l.AllowN(10) {
		t.Fatal("burst refused")
	}
	if l.Allow() {
		t.Fatal("allowed with an empty bucket")
	}
	clk.Advance(2 * time.Second)
	if !l.AllowN(10) {
		t.Fatal("not refilled after 2s at 5/s")
	}
}

func TestLimiterWaitExceedsBurst(t *testing.T) {
	l := New(100, 2)
	if err := l.WaitN(context.Background(), 3); !errors.Is(err, ErrExceedsBurst) {
		t.Fatalf("got %v", err)
	}
}

func TestLimiterWaitCancelled(t *testing.T) {
	l := New(0.001, 1)
	l.Allow()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}
