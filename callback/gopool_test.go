package callback

import (
	"sync"
	"testing"
	"time"
)

// TestGoPoolReusesGoroutines: functions handed to the pool one after the
// other run on the goroutine the first one started, and those handed out
// at once each get a goroutine of their own (none waits for another).
func TestGoPoolReusesGoroutines(t *testing.T) {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	defer func() { close(stop); wg.Wait() }()
	p := newGoPool(&wg, stop, time.Minute)
	for range 50 {
		ran := make(chan struct{})
		p.Go(func() { close(ran) })
		<-ran
		// every goroutine back to waiting (waiting counts one a moment
		// before its select, so a Go in that moment may start another:
		// rare, hence a bound below, not exactly 1)
		waitFor(t, "the goroutines to wait again", func() bool { return p.waiting.Load() == p.started.Load() })
	}
	if got := p.started.Load(); got > 5 {
		t.Fatalf("50 functions run one after the other started %d goroutines, want them reused (at most 5; without reuse 50)", got)
	}

	// ten at once, each blocked until all ten run: they cannot share a goroutine
	const n = 10
	var all sync.WaitGroup
	all.Add(n)
	release := make(chan struct{})
	for range n {
		p.Go(func() { all.Done(); <-release })
	}
	waitGroup(t, "functions handed out at once to run together: one waited for another", &all)
	close(release)
	if got := p.started.Load(); got < n {
		t.Errorf("%d goroutines started for %d functions at once, want at least %d", got, n, n)
	}
}

// TestGoPoolGoroutinesEnd: a kept goroutine ends after idle with nothing
// to run, and at once when stop is closed; wg sees both.
func TestGoPoolGoroutinesEnd(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		var wg sync.WaitGroup
		p := newGoPool(&wg, make(chan struct{}), 20*time.Millisecond)
		p.Go(func() {})
		waitGroup(t, "an idle goroutine to end", &wg)
	})
	t.Run("stop", func(t *testing.T) {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		p := newGoPool(&wg, stop, time.Hour)
		p.Go(func() {})
		waitFor(t, "the goroutine to wait", func() bool { return p.waiting.Load() == 1 })
		close(stop)
		waitGroup(t, "a waiting goroutine to end when stop closed", &wg)
	})
}
