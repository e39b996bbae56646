package ratelimit

import (
	"net"
	"net/http"
	"strconv"
	"time"
)

// KeyFunc picks the key a request is limited by.
type KeyFunc func(r *http.Request) string

// ByRemoteIP limits by the client address, without its port.
func ByRemoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// ByHeader limits by the value of a request header, such as an API key.
func ByHeader(name string) KeyFunc {
	return func(r *http.Request) string { return r.Header.Get(name) }
}

// Middleware lets requests through to next while l allows them and answers the rest with 429 Too Many Requests.
func Middleware(l *Limiter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.Allow() {
			setRemaining(w, l)
			next.ServeHTTP(w, r)
			return
		}
		reject(w, l.Delay())
	})
}

// KeyedMiddleware is Middleware with one limiter per key.
func KeyedMiddleware(k *Keyed, key KeyFunc, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := k.Get(key(r))
		if l.Allow() {
			setRemaining(w, l)
			next.ServeHTTP(w, r)
			return
		}
		reject(w, l.Delay())
	})
}

func setRemaining(w http.ResponseWriter, l *Limiter) {
	w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(int(l.Tokens())))
}

// reject answers 429 with a Retry-After header telling the client how many seconds to wait.
func reject(w http.ResponseWriter, delay time.Duration) {
	w.Header().Set("X-RateLimit-Remaining", "0")
	if delay >= 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(delay.Seconds())))
	}
	http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
}
