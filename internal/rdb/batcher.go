package rdb

import "sync"

// batcher gathers requests that arrive together so that they share one
// round trip to Redis. The first request starts a writer goroutine; every
// request queued while the writer's round trip is in flight goes in its next
// one; the writer exits when the queue is empty. So an idle caller waits for
// nothing, and callers at the same moment share round trips.
type batcher[T any] struct {
	write func([]T) // set before first use

	mu      sync.Mutex
	queue   []T
	writing bool
}

// add queues r for the writer, starting one if none runs.
func (b *batcher[T]) add(r T) {
	b.mu.Lock()
	b.queue = append(b.queue, r)
	if b.writing {
		b.mu.Unlock()
		return
	}
	b.writing = true
	b.mu.Unlock()
	go func() {
		for {
			b.mu.Lock()
			batch := b.queue
			b.queue = nil
			if len(batch) == 0 {
				b.writing = false
				b.mu.Unlock()
				return
			}
			b.mu.Unlock()
			b.write(batch)
		}
	}()
}
