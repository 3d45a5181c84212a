package callback

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kairos-sh/kairos"
)

// topicRun is a topic's consumer: its settings as last read, and its
// callback slots.
type topicRun struct {
	topic  atomic.Pointer[kairos.Topic]
	cancel context.CancelFunc
	busy   atomic.Int64  // callback slots taken: callbacks in flight and takes under way (next)
	freed  chan struct{} // a nudge when one ends
}

// sync starts, resizes and stops topic consumers to match the topic list.
func (w *Worker) sync(ctx context.Context, wg *sync.WaitGroup) {
	if ctx.Err() != nil {
		return
	}
	topics, err := w.st.Topics(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("read topics", "err", err)
		}
		return
	}
	w.setLists(ctx, topics)
	seen := make(map[string]bool, len(topics))
	var longest time.Duration
	for _, t := range topics {
		longest = max(longest, t.WithDefaults().Timeout)
		name := t.Tenant + "/" + t.Name
		seen[name] = true
		t := t.WithDefaults()
		run := w.topics[name]
		if run == nil {
			run = &topicRun{}
			w.topics[name] = run
			w.log.Info("consuming topic", "tenant", t.Tenant, "topic", t.Name, "concurrency", t.Concurrency)
		}
		run.topic.Store(&t)
		if run.cancel == nil {
			cctx, cancel := context.WithCancel(ctx)
			run.cancel, run.freed = cancel, make(chan struct{}, 1)
			wg.Go(func() { w.consume(cctx, run, wg) })
		}
	}
	w.longest.Store(int64(longest))
	for name, run := range w.topics {
		if !seen[name] {
			run.cancel()
			delete(w.topics, name)
			w.log.Info("topic gone; consumer stopped", "topic", name)
		}
	}
}

// consume is a topic's consumer: it reserves the topic's free callback
// slots, takes up to that many due jobs that flow control lets start
// (next), fires each in its own goroutine (tracked by wg) and records the
// outcomes, until ctx ends. Two takes may be under way at once, so that
// one waits while the other starts its jobs; slots a take did not fill
// are freed.
func (w *Worker) consume(ctx context.Context, run *topicRun, wg *sync.WaitGroup) {
	const takers = 2
	takes := make(chan struct{}, takers)
	// takes and callbacks run on kept goroutines (goPool): a callback's
	// goroutine keeps the stack net/http grew
	gs := newGoPool(wg, ctx.Done(), poolIdle)
	for ctx.Err() == nil {
		t := run.topic.Load()
		busy := run.busy.Load()
		n := int64(t.Concurrency) - busy
		if n <= 0 { // every slot taken: wait for one to free
			select {
			case <-ctx.Done():
			case <-run.freed:
			}
			continue
		}
		if !run.busy.CompareAndSwap(busy, busy+n) { // a slot freed meanwhile: look again
			continue
		}
		select {
		case takes <- struct{}{}:
		case <-ctx.Done():
			run.free(n)
			return
		}
		gs.Go(func() {
			defer func() { <-takes }()
			jobs := w.next(ctx, t.Tenant, t.Name, int(n), w.cfg.Wait)
			run.free(n - int64(len(jobs)))
			for _, job := range jobs {
				w.inflight.Add(1)
				gs.Go(func() {
					w.fire(w.deliver, job, *run.topic.Load(), func() {
						w.inflight.Add(-1)
						run.free(1)
					})
				})
			}
		})
	}
}

// next hands out up to n of a topic's held jobs whose due time has come
// and that flow control lets start now (flowClient.gate), waiting up to
// wait for one.
func (w *Worker) next(ctx context.Context, tenant, topic string, n int, wait time.Duration) []kairos.Job {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		done := w.hold.turn(tenant, topic)
		cs := w.hold.take(ctx, tenant, topic, n)
		jobs := w.flow.gate(context.WithoutCancel(ctx), tenant, topic, cs)
		done()
		if len(jobs) > 0 {
			return jobs
		}
		select {
		case <-ctx.Done():
			return nil
		case <-deadline.C:
			return nil
		case <-w.hold.ready(tenant, topic):
		}
	}
}

// poolIdle is how long a topic's kept goroutine waits for its next
// callback or take before it ends.
const poolIdle = 10 * time.Second

// free frees n of a topic's callback slots.
func (r *topicRun) free(n int64) {
	if n <= 0 {
		return
	}
	r.busy.Add(-n)
	select {
	case r.freed <- struct{}{}:
	default:
	}
}
