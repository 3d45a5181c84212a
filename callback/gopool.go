package callback

import (
	"sync"
	"sync/atomic"
	"time"
)

// goPool runs functions on goroutines it keeps for a while after they
// finish, instead of a new goroutine each. A callback runs deep in net/http
// and grows its goroutine's stack from the few KiB a new one starts with,
// copying it each time it doubles: at thousands of callbacks a second that
// copying showed in the process's CPU profile (BenchmarkWorkerDeliver;
// docs/performance.md). A
// kept goroutine keeps its grown stack. gRPC's server reuses its stream
// workers for the same reason.
//
// A function is handed only to a goroutine waiting for one, never queued:
// Go never delays f. Goroutines wait up to idle for their next function,
// and end at once when stop is closed; wg tracks them.
type goPool struct {
	work chan func()
	stop <-chan struct{}
	wg   *sync.WaitGroup
	idle time.Duration

	started atomic.Int64 // goroutines started, for tests
	waiting atomic.Int64 // goroutines waiting for a function now
}

func newGoPool(wg *sync.WaitGroup, stop <-chan struct{}, idle time.Duration) *goPool {
	return &goPool{work: make(chan func()), stop: stop, wg: wg, idle: idle}
}

// Go runs f on a waiting goroutine, or on a new one when none is waiting.
func (p *goPool) Go(f func()) {
	select {
	case p.work <- f:
		return
	default:
	}
	p.started.Add(1)
	p.wg.Go(func() {
		f()
		idle := time.NewTimer(p.idle)
		defer idle.Stop()
		for {
			var next func()
			p.waiting.Add(1)
			select {
			case next = <-p.work:
			case <-idle.C:
			case <-p.stop:
			}
			p.waiting.Add(-1)
			if next == nil {
				return // idle too long, or stopped
			}
			next()
			idle.Reset(p.idle)
		}
	})
}
