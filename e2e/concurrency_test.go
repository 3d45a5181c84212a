package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestTopicConcurrencyBoundsCallbacks: a topic's worker has at most
// `concurrency` callbacks in flight, reaches that many when jobs are
// waiting, and follows a change of the setting.
func TestTopicConcurrencyBoundsCallbacks(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	var inflight, peak, hits atomic.Int64
	var mu sync.Mutex
	seen := map[string]int{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(150 * time.Millisecond) // the point: the callback is held, its slot busy
		inflight.Add(-1)
		mu.Lock()
		seen[r.Header.Get("Kairos-Job-Id")]++
		mu.Unlock()
		hits.Add(1)
	}))
	t.Cleanup(rcv.Close)

	run := func(concurrency, jobs int, prefix string) {
		t.Helper()
		e.putTopicWith("t", client.TopicRequest{CallbackURL: rcv.URL, Concurrency: concurrency})
		peak.Store(0)
		before := hits.Load()
		items := make([]client.JobRequest, jobs)
		for i := range items {
			items[i] = client.JobRequest{ID: fmt.Sprintf("%s-%d", prefix, i)}
		}
		e.createBatch("t", items)
		testwait.UntilNil(t, 20*time.Second, func() error {
			if n := hits.Load() - before; n < int64(jobs) {
				return fmt.Errorf("%d of %d delivered", n, jobs)
			}
			return nil
		}, fmt.Sprintf("concurrency %d: the jobs delivered", concurrency))
		if p := peak.Load(); p != int64(concurrency) {
			t.Fatalf("concurrency %d: at most %d callbacks were in flight at once, want exactly %d", concurrency, p, concurrency)
		}
	}
	run(3, 12, "a")
	// The first run's outcomes recorded, its slots free. The PUT in run
	// nudges the worker to re-read the topic (TopicPoll is the fallback).
	waitSettled(t, e.store)
	run(5, 15, "b")
	mu.Lock()
	defer mu.Unlock()
	for id, n := range seen {
		if n != 1 {
			t.Errorf("job %s delivered %d times", id, n)
		}
	}
}
