package rdb

import (
	"context"
	"sync"
	"time"
)

// batcher gathers requests that arrive together so that they share one
// round trip to Redis. A request that finds no write under way writes at
// once, in its caller's goroutine; requests queued while a write is under
// way go together in the next one, written by a goroutine that drains the
// queue and then exits. So a lone caller pays no hand-off, and callers at
// the same moment share round trips.
type batcher[T any] struct {
	write func([]T) // set before first use

	mu      sync.Mutex
	queue   []T
	writing bool
}

// do writes r, alone or with others; it returns once r is written or
// queued for the write under way (then the caller waits on r itself).
func (b *batcher[T]) do(r T) {
	b.mu.Lock()
	if b.writing {
		b.queue = append(b.queue, r)
		b.mu.Unlock()
		return
	}
	b.writing = true
	b.mu.Unlock()
	b.write([]T{r})
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.writing = false
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	go b.drain() // others queued meanwhile: a goroutine writes them, this caller returns
}

// drain writes queued requests until none are left.
func (b *batcher[T]) drain() {
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
}

// batchContext is the context a batch is written on: the values of its
// first caller's context but not its cancel, as the others wait on the same
// write, and at most 10 s, as long as a worker allows an outcome.
func batchContext(first context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(first), 10*time.Second)
}

// await waits until done is closed (the request is written), or ctx ends.
func await(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
