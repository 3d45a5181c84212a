package rdb

import (
	"sync"
	"testing"
	"time"
)

// TestBatcherWritesEachOnce: concurrent requests are each written exactly
// once, a lone request is written in its caller's goroutine, and requests
// that arrive during a write share the next one.
func TestBatcherWritesEachOnce(t *testing.T) {
	for _, linger := range []time.Duration{0, 5 * time.Millisecond} {
		t.Run("linger="+linger.String(), func(t *testing.T) { testBatcherWritesEachOnce(t, linger) })
	}
}

func testBatcherWritesEachOnce(t *testing.T, linger time.Duration) {
	type req struct {
		n    int
		done chan struct{}
	}
	var mu sync.Mutex
	written := map[int]int{}
	writes := 0
	b := &batcher[*req]{linger: linger, lingerMax: 50, write: func(batch []*req) {
		time.Sleep(2 * time.Millisecond) // a round trip
		mu.Lock()
		writes++
		for _, r := range batch {
			written[r.n]++
		}
		mu.Unlock()
		for _, r := range batch {
			close(r.done)
		}
	}}

	lone := &req{n: -1, done: make(chan struct{})}
	b.do(lone)
	select {
	case <-lone.done:
	default:
		t.Fatal("a lone request was not written by the time do returned")
	}

	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := &req{n: i, done: make(chan struct{})}
			b.do(r)
			<-r.done
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		if written[i] != 1 {
			t.Fatalf("request %d written %d times", i, written[i])
		}
	}
	if writes-1 >= n {
		t.Fatalf("%d concurrent requests took %d writes: none shared a write", n, writes-1)
	}
	t.Logf("%d concurrent requests in %d writes", n, writes-1)
}
