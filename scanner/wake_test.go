package scanner

import (
	"testing"
	"time"
)

// A later wake-up arriving while an earlier one is pending must not replace
// it, and an earlier one must replace a later one: the loop always gets the
// earliest. (Before, a full one-slot channel dropped the newest wake-up, so
// a job rescheduled earlier could wait for the safety-net sleep.)
func TestWakeUpsCoalesceToTheEarliest(t *testing.T) {
	sh := &shard{wake: make(chan struct{}, 1)}
	base := time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)
	sh.notify(base.Add(time.Hour))
	sh.notify(base.Add(time.Second))
	sh.notify(base.Add(time.Minute))
	select {
	case <-sh.wake:
	default:
		t.Fatal("no wake-up signalled")
	}
	if got := sh.takeWake(); !got.Equal(base.Add(time.Second)) {
		t.Fatalf("took %v, want the earliest %v", got, base.Add(time.Second))
	}
	if got := sh.takeWake(); !got.IsZero() {
		t.Fatalf("a taken wake-up was taken again: %v", got)
	}
}
