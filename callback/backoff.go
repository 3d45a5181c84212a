package callback

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter caps what a receiver's Retry-After can ask for.
const maxRetryAfter = 24 * time.Hour

// Backoff returns how long to wait after failed attempt number attempt
// (1-based): a "full jitter" draw, uniform in [0, min(maxWait, initial*2^(attempt-1))].
// Any attempt count is safe: the window stops growing at maxWait. An attempt
// below 1 counts as 1, and a non-positive initial or maxWait gives 0. rnd returns
// a float in [0, 1); nil means math/rand/v2.
func Backoff(attempt int, initial, maxWait time.Duration, rnd func() float64) time.Duration {
	if initial <= 0 || maxWait <= 0 {
		return 0
	}
	if rnd == nil {
		rnd = rand.Float64
	}
	window := maxWait
	if shift := max(attempt-1, 0); shift < 63 && initial <= maxWait>>shift {
		window = initial << shift
	}
	f := rnd()
	if !(f > 0) { // also NaN
		return 0
	}
	if x := f * float64(window); x < float64(window) {
		return time.Duration(x)
	}
	return window
}

// RetryAfter parses the Retry-After header of a response at time now: either
// delta-seconds or an HTTP-date. It reports false when the header is absent
// or malformed. A time in the past gives 0; the result is capped at 24h.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil || isRange(err) {
		switch {
		case n <= 0:
			d = 0
		case n >= int64(maxRetryAfter/time.Second):
			d = maxRetryAfter
		default:
			d = time.Duration(n) * time.Second
		}
		return d, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d = t.Sub(now)
	return min(max(d, 0), maxRetryAfter), true
}

// isRange reports whether err is strconv's out-of-range error, whose value
// is then the clamped extreme: a huge number still means "wait long".
func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
