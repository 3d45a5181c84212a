// Package testwait lets a test wait for a condition instead of for a fixed
// time: it polls the condition, first every millisecond and then less often,
// and fails the test with a message naming what it waited for when the
// condition does not hold within a deadline. Deadlines are generous (machines
// running tests are shared and noisy): a condition that holds returns at
// once, so a long deadline costs only a failing test's time.
//
// A sleep that is the point of a test (letting time pass to show that nothing
// happens, pacing a load) is not a wait for something, and stays a sleep.
package testwait

import (
	"testing"
	"time"
)

// Patience is the deadline for something that should happen within
// milliseconds, generous so that a loaded machine does not fail the test.
const Patience = 10 * time.Second

// maxInterval bounds the pause between two looks at a condition: a look
// may cost a request, and a condition waited for long is looked at no more
// than 20 times a second.
const maxInterval = 50 * time.Millisecond

// Until polls cond until it holds, and fails tb (Fatal) if it does not
// within the deadline within: "gave up waiting after <within>: <what>".
func Until(tb testing.TB, within time.Duration, cond func() bool, what string) {
	tb.Helper()
	if !poll(within, cond) {
		tb.Fatalf("gave up waiting after %v: %s", within, what)
	}
}

// UntilNil polls check until it returns nil, and fails tb (Fatal) if it
// does not within the deadline within, with check's last error: the state
// that was wrong, for the failure message.
func UntilNil(tb testing.TB, within time.Duration, check func() error, what string) {
	tb.Helper()
	var last error
	if !poll(within, func() bool { last = check(); return last == nil }) {
		tb.Fatalf("gave up waiting after %v: %s: %v", within, what, last)
	}
}

// Receive waits for a value on ch (or its close) and returns it, and fails
// tb (Fatal) if none comes within the deadline within.
func Receive[T any](tb testing.TB, within time.Duration, ch <-chan T, what string) T {
	tb.Helper()
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		tb.Fatalf("gave up waiting after %v: %s", within, what)
	}
	var zero T
	return zero
}

// poll reports whether cond holds within the deadline; it looks at cond
// once more at the deadline, so that a slow look is not cut short.
func poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for wait := time.Millisecond; ; wait = min(2*wait, maxInterval) {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return cond()
		}
		time.Sleep(min(wait, left)) // the poll's pause between looks
	}
}
