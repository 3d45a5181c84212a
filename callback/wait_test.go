package callback

import (
	"sync"
	"testing"
	"time"
)

// patience is how long a test waits for something that should happen
// within milliseconds: generous, so that a loaded machine does not fail a
// test, and bounded, so that a missing event fails it rather than hanging.
const patience = 10 * time.Second

// waitFor polls cond every millisecond until it holds, and fails the test
// if it does not within patience.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(patience); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("gave up waiting after %v: %s", patience, what)
		}
	}
}

// receive waits for a value on ch (or its close) and returns it, and fails
// the test if none comes within patience.
func receive[T any](tb testing.TB, what string, ch <-chan T) T {
	tb.Helper()
	t := time.NewTimer(patience)
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		tb.Fatalf("gave up waiting after %v: %s", patience, what)
	}
	var zero T
	return zero
}

// waitGroup waits for wg, and fails the test if it is not done within
// patience.
func waitGroup(tb testing.TB, what string, wg *sync.WaitGroup) {
	tb.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	receive(tb, what, done)
}
