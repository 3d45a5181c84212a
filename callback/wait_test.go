package callback

import (
	"sync"
	"testing"

	"github.com/kairos-sh/kairos/internal/testwait"
)

// patience is how long a test waits for something that should happen
// within milliseconds (testwait.Patience).
const patience = testwait.Patience

// waitFor polls cond until it holds, and fails the test if it does not
// within patience.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	testwait.Until(tb, patience, cond, what)
}

// receive waits for a value on ch (or its close) and returns it, and fails
// the test if none comes within patience.
func receive[T any](tb testing.TB, what string, ch <-chan T) T {
	tb.Helper()
	return testwait.Receive(tb, patience, ch, what)
}

// waitGroup waits for wg, and fails the test if it is not done within
// patience.
func waitGroup(tb testing.TB, what string, wg *sync.WaitGroup) {
	tb.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	receive(tb, what, done)
}
