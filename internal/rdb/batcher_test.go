package rdb

import (
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testwait"
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

// TestBatcherDoNow: with a linger far longer than the test may take, a
// doNow request is written at once, and one that arrives while another
// lingers ends the wait, both in one write.
func TestBatcherDoNow(t *testing.T) {
	type req struct{ done chan struct{} }
	writes := make(chan int, 4)
	b := &batcher[*req]{linger: time.Hour, lingerMax: 50, write: func(batch []*req) {
		writes <- len(batch)
		for _, r := range batch {
			close(r.done)
		}
	}}
	deadline := time.After(30 * time.Second)
	wait := func(what string, r *req) {
		t.Helper()
		select {
		case <-r.done:
		case <-deadline:
			t.Fatalf("%s: not written after 30 s (the linger is an hour)", what)
		}
	}

	alone := &req{make(chan struct{})}
	go b.doNow(alone) // a lingering write would hold its caller
	wait("a lone doNow", alone)
	if n := <-writes; n != 1 {
		t.Fatalf("a lone doNow wrote %d requests, want 1", n)
	}

	lingering := &req{make(chan struct{})}
	go b.do(lingering) // waits for company, up to the hour
	testwait.Until(t, testwait.Patience, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.writing
	}, "the request lingering")
	prompt := &req{make(chan struct{})}
	go b.doNow(prompt)
	wait("doNow during a linger", prompt)
	wait("the lingering request", lingering)
	if n := <-writes; n != 2 {
		t.Fatalf("the linger ended by doNow wrote %d requests, want both in one write", n)
	}
}
