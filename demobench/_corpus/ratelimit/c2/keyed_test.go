package ratelimit

import "testing"

func TestKeyedSeparateBuckets(t *testing.T) {
	clk := NewFakeClock(t0)
	k := NewKeyed(1, 1, 10, WithClock(clk))
	if !k.Allow("alice") || !k.Allow("bob") {
		t.Fatal("first event of each key refused")
	}
	if k.Allow("alice") {
		t.Fatal("alice's second event allowed")
	}
}

func TestKeyedForgetsOldKeys(t *testing.T) {
	k := NewKeyed(1, 1, 2, WithClock(NewFakeClock(t0)))
	k.Allow("a")
	k.Allow("b")
	k.Allow("c")
	if k.Len() != 2 {
		t.Fatalf("len %d, want 2", k.Len())
	}
	if !k.Allow("a") {
		t.Fatal("a was forgotten, so it should start with a full bucket")
	}
}
