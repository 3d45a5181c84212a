package callback

import (
	"math"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	const s = time.Second
	fixed := func(f float64) func() float64 { return func() float64 { return f } }
	for _, tc := range []struct {
		name             string
		attempt          int
		initial, maxWait time.Duration
		rnd              float64
		want             time.Duration
	}{
		{"first attempt, top of window", 1, s, time.Hour, 0.999999999, s - 1},
		{"first attempt, middle", 1, s, time.Hour, 0.5, s / 2},
		{"draw of zero", 5, s, time.Hour, 0, 0},
		{"second attempt doubles", 2, s, time.Hour, 0.5, s},
		{"fifth attempt", 5, s, time.Hour, 0.5, 8 * s},
		{"capped at max", 20, s, time.Minute, 0.5, 30 * s},
		{"huge attempt", math.MaxInt, s, time.Minute, 0.5, 30 * s},
		{"attempt 63: window 2^62", 63, 1, math.MaxInt64, 0.25, 1 << 60},
		{"attempt 64: window max", 64, 1, math.MaxInt64, 0.5, 1 << 62},
		{"attempt 64", 64, 1, time.Hour, 0.5, 30 * time.Minute},
		{"initial above max", 1, time.Hour, time.Minute, 0.5, 30 * s},
		{"max duration window", 3, math.MaxInt64 / 2, math.MaxInt64, 0.9999999999999999, math.MaxInt64 - 1023},
		{"attempt zero counts as one", 0, s, time.Hour, 0.5, s / 2},
		{"negative attempt", -3, s, time.Hour, 0.5, s / 2},
		{"zero initial", 3, 0, time.Hour, 0.5, 0},
		{"zero max", 3, s, 0, 0.5, 0},
		{"rnd above one is clamped", 1, s, time.Hour, 7, s},
		{"negative rnd is clamped", 1, s, time.Hour, -1, 0},
		{"NaN rnd", 1, s, time.Hour, math.NaN(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Backoff(tc.attempt, tc.initial, tc.maxWait, fixed(tc.rnd)); got != tc.want {
				t.Errorf("Backoff(%d, %v, %v, %v) = %v (%d), want %v (%d)",
					tc.attempt, tc.initial, tc.maxWait, tc.rnd, got, got, tc.want, tc.want)
			}
		})
	}
}

func TestBackoffProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100_000; i++ {
		attempt := r.IntN(100) - 2
		initial := time.Duration(r.Int64N(int64(time.Minute))) + 1
		maxWait := time.Duration(r.Int64N(int64(24*time.Hour))) + 1
		window := initial * time.Duration(math.Pow(2, float64(max(attempt, 1)-1)))
		if window > maxWait || window <= 0 || max(attempt, 1) > 60 {
			window = maxWait
		}
		var rnd func() float64 // nil: the package default
		if i%2 == 0 {
			rnd = r.Float64
		}
		got := Backoff(attempt, initial, maxWait, rnd)
		if got < 0 || got > window {
			t.Fatalf("Backoff(%d, %v, %v) = %v, outside [0, %v]", attempt, initial, maxWait, got, window)
		}
	}

	// Full jitter: the draws spread over the whole window.
	var below, above int
	for range 10_000 {
		d := Backoff(4, time.Second, time.Hour, nil)
		switch {
		case d < 2*time.Second:
			below++
		case d > 6*time.Second:
			above++
		}
	}
	if below < 1000 || above < 1000 {
		t.Errorf("of 10000 draws in [0, 8s], %d fell below 2s and %d above 6s; want about 2500 each", below, above)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name, value string
		want        time.Duration
		wantOK      bool
	}{
		{"absent", "", 0, false},
		{"seconds", "120", 2 * time.Minute, true},
		{"zero", "0", 0, true},
		{"padded", " 7 ", 7 * time.Second, true},
		{"negative", "-5", 0, true},
		{"capped", "999999", 24 * time.Hour, true},
		{"overflowing", "99999999999999999999999", 24 * time.Hour, true},
		{"HTTP-date ahead", "Fri, 02 Jan 2026 15:05:05 GMT", time.Minute, true},
		{"HTTP-date past", "Fri, 02 Jan 2026 15:00:00 GMT", 0, true},
		{"HTTP-date far", "Fri, 01 Jan 2027 00:00:00 GMT", 24 * time.Hour, true},
		{"RFC 850 date", "Friday, 02-Jan-26 15:04:35 GMT", 30 * time.Second, true},
		{"ANSI C date", "Fri Jan  2 15:04:15 2026", 10 * time.Second, true},
		{"fraction", "1.5", 0, false},
		{"garbage", "soon", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.value != "" {
				h.Set("Retry-After", tc.value)
			}
			got, ok := RetryAfter(h, now)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("RetryAfter(%q) = %v, %t; want %v, %t", tc.value, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "-1", "", "Fri, 02 Jan 2026 15:05:05 GMT", "Monday, 02-Jan-06 15:04:05 MST",
		"Mon Jan  2 15:04:05 2006", "1e3", "+5", "0x10", "99999999999999999999"} {
		f.Add(s, int64(1_767_366_245))
	}
	f.Fuzz(func(t *testing.T, v string, unix int64) {
		h := http.Header{"Retry-After": {v}}
		d, ok := RetryAfter(h, time.Unix(unix, 0))
		if d < 0 || d > 24*time.Hour || (!ok && d != 0) {
			t.Fatalf("RetryAfter(%q) = %v, %t; want 0 <= d <= 24h, and 0 when not ok", v, d, ok)
		}
	})
}
