package client

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy bounds the retries of idempotent calls (see the package
// documentation for which calls those are). Zero fields take the defaults.
type RetryPolicy struct {
	// Attempts is how many times a call is sent at most, the first time
	// included: 1 turns retries off. Default 4.
	Attempts int
	// Initial bounds the wait before the first retry, and doubles for each
	// further one up to Max; each wait is a random time up to its bound.
	// Defaults 200ms and 5s.
	Initial, Max time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for; an
	// answer asking for more is returned as the call's error. Default 30s.
	MaxRetryAfter time.Duration
}

// DefaultRetryPolicy is the policy of a client made without
// [WithRetryPolicy].
var DefaultRetryPolicy = RetryPolicy{Attempts: 4, Initial: 200 * time.Millisecond, Max: 5 * time.Second, MaxRetryAfter: 30 * time.Second}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy
	if p.Attempts <= 0 {
		p.Attempts = d.Attempts
	}
	if p.Initial <= 0 {
		p.Initial = d.Initial
	}
	if p.Max <= 0 {
		p.Max = d.Max
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = d.MaxRetryAfter
	}
	return p
}

// backoff is the wait before retry n (1-based): a random time in
// [0, min(Max, Initial·2^(n-1))].
func (p RetryPolicy) backoff(n int) time.Duration {
	bound := p.Max
	if n < 30 && p.Initial<<(n-1) < bound {
		bound = p.Initial << (n - 1)
	}
	return rand.N(bound + 1)
}

// retryableStatus reports whether an answer with this status may be
// retried: too many requests, and a gateway or the server unavailable.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryAfter parses a Retry-After header, seconds or an HTTP date, relative
// to now; ok is false when there is none or it cannot be read.
func retryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, 1<<32)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
