package rdb

import (
	"context"
	"sync"
	"time"
)

// batcher gathers requests that arrive together so that they share one
// round trip to Redis. A request that finds no write under way writes at
// once, in its caller's goroutine (after waiting up to linger for company,
// when linger is set); requests queued while a write is under way go
// together in the next one, written by a goroutine that drains the queue
// and then exits. So a lone caller pays no hand-off, and callers at the
// same moment share round trips.
type batcher[T any] struct {
	write func([]T) // set before first use
	// linger is how long a request that finds no write under way waits for
	// others to share its write; a queue of lingerMax ends the wait early.
	// Zero: it writes at once.
	linger    time.Duration
	lingerMax int

	mu      sync.Mutex
	queue   []T
	writing bool
	full    chan struct{} // ends a linger: the queue reached lingerMax, or doNow was called
}

// do writes r, alone or with others; it returns once r is written or
// queued for the write under way (then the caller waits on r itself).
func (b *batcher[T]) do(r T) { b.put(r, false) }

// doNow is do for a caller that cannot wait for company: r is written
// without lingering, and a linger under way ends now, r joining its write.
func (b *batcher[T]) doNow(r T) { b.put(r, true) }

func (b *batcher[T]) put(r T, now bool) {
	b.mu.Lock()
	if b.writing {
		b.queue = append(b.queue, r)
		if b.full != nil && (now || b.lingerMax > 0 && len(b.queue) >= b.lingerMax) {
			select {
			case b.full <- struct{}{}:
			default:
			}
		}
		b.mu.Unlock()
		return
	}
	b.writing = true
	batch := []T{r}
	if b.linger > 0 && !now {
		if b.full == nil {
			b.full = make(chan struct{}, 1)
		}
		select { // a signal left from an earlier wait
		case <-b.full:
		default:
		}
		b.mu.Unlock()
		t := time.NewTimer(b.linger)
		select {
		case <-t.C:
		case <-b.full:
			t.Stop()
		}
		b.mu.Lock()
		batch = append(batch, b.queue...)
		b.queue = nil
	}
	b.mu.Unlock()
	b.write(batch)
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
// write, and at most 10 s, as long as a worker allows an outcome, or the
// first caller's deadline when that comes sooner: the first caller writes
// in its own goroutine, and an API request bounded by its deadline must
// not wait on a frozen Redis past it.
func batchContext(first context.Context) (context.Context, context.CancelFunc) {
	d := 10 * time.Second
	if dl, ok := first.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	return context.WithTimeout(context.WithoutCancel(first), d)
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
