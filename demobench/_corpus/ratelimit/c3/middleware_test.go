package ratelimit

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
}

func serve(h http.Handler, remote string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/api/items", nil)
	if remote != "" {
		req.RemoteAddr = remote
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestMiddlewareAllowsUnderLimit(t *testing.T) {
	l := New(1, 2, WithClock(NewFakeClock(t0)))
	h := Middleware(l, okHandler())
	for i := 0; i < 2; i++ {
		rec := serve(h, "")
		if rec.Code != http.StatusNoContent {
			t.Fatalf("request %d: status %d", i, rec.Code)
		}
	}
	if got := serve(h, "").Code; got != http.StatusTooManyRequests {
		t.Fatalf("third request: status %d, want 429", got)
	}
}

func TestMiddlewareRetryAfterWholeSeconds(t *testing.T) {
	l := New(0.5, 1, WithClock(NewFakeClock(t0)))
	h := Middleware(l, okHandler())
	serve(h, "")
	rec := serve(h, "")
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("status %d", rec.Code)
	}
	if got := rec.Header().Get("Retry-After"); got != "2" {
		t.Fatalf("Retry-After %q, want 2", got)
	}
}

func TestKeyedMiddlewareByIP(t *testing.T) {
	k := NewKeyed(1, 1, 100, WithClock(NewFakeClock(t0)))
	h := KeyedMiddleware(k, ByRemoteIP, okHandler())
	if serve(h, "192.0.2.1:1234").Code != http.StatusNoContent || serve(h, "192.0.2.2:1234").Code != http.StatusNoContent {
		t.Fatal("first request of each client refused")
	}
	if serve(h, "192.0.2.1:5678").Code != http.StatusTooManyRequests {
		t.Fatal("second request of the same client (other port) allowed")
	}
}
