package ratelimit

import (
	"testing"
	"time"
)

var t0 = time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)

func TestBucketBurst(t *testing.T) {
	b := NewBucket(1, 3, t0)
	for i := 0; i < 3; i++ {
		if !b.Take(t0, 1) {
			t.Fatalf("take %d refused within burst", i)
		}
	}
	if b.Take(t0, 1) {
		t.Fatal("take beyond burst allowed")
	}
}

func TestBucketRefillWholeSeconds(t *testing.T) {
	b := NewBucket(2, 4, t0)
	if !b.Take(t0, 4) {
		t.Fatal("could not empty the bucket")
	}
	if got := b.Tokens(t0.Add(time.Second)); got != 2 {
		t.Fatalf("after 1s: %v tokens, want 2", got)
	}
	if got := b.Tokens(t0.Add(10 * time.Second)); got != 4 {
		t.Fatalf("after 10s: %v tokens, want the burst of 4", got)
	}
}

func TestBucketDelay(t *testing.T) {
	b := NewBucket(2, 2, t0)
	b.Take(t0, 2)
	if got := b.Delay(t0, 1); got != 500*time.Millisecond {
		t.Fatalf("delay %v, want 500ms", got)
	}
	if got := b.Delay(t0, 3); got >= 0 {
		t.Fatalf("delay for more than the burst = %v, want negative", got)
	}
}
