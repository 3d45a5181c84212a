package callback

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/kairos-sh/kairos"
)

// The scanners push what they claim onto per-topic ready lists, one a
// topic in each shard (a shard is one hash slot). A worker pops them with
// blocking pops (BLMPOP) that cover every topic it knows: one pop for all
// shards on a single Redis, one a shard on a cluster (Store.PopGroups), so
// its Redis connections do not grow with topics; an idle worker costs
// Redis one pop a group every Wait.

// popTopic is a topic whose ready lists a worker pops.
type popTopic struct {
	h           string // its handle, which names its lists
	tenant      string
	name        string
	concurrency int
}

// popLists are the topics popped, shared by the shards' pop loops.
type popLists struct {
	mu      sync.Mutex
	topics  []popTopic
	changed chan struct{} // closed and replaced when topics change
}

func newPopLists() popLists { return popLists{changed: make(chan struct{})} }

// popBatch bounds the jobs one pop takes; popStarts the starts of popped
// jobs under way at once, beside the pops.
const (
	popBatch  = 1000
	popStarts = 4
)

// busyWait is how long a pop loop that has room but no topic to pop (each
// waits for its callback slots) idles before it looks again, should no
// drain tell it sooner (holder.refillSignal).
const busyWait = 50 * time.Millisecond

// setLists makes the pops cover topics: the handles of those that have
// one (a topic gets one with its first job; the wake message that follows
// brings the worker here again). Pops under way are interrupted when the
// set of lists changed.
func (w *Worker) setLists(ctx context.Context, topics []kairos.Topic) {
	hs, err := w.st.Handles(ctx, topics)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("read the topics' handles; their jobs are popped once they are read", "err", err)
		}
		return
	}
	next := make([]popTopic, 0, len(topics))
	for i, t := range topics {
		if hs[i] != "" {
			next = append(next, popTopic{h: hs[i], tenant: t.Tenant, name: t.Name, concurrency: t.WithDefaults().Concurrency})
		}
	}
	slices.SortFunc(next, func(a, b popTopic) int {
		if a.h < b.h {
			return -1
		}
		if a.h > b.h {
			return 1
		}
		return 0
	})
	l := &w.lists
	l.mu.Lock()
	same := slices.EqualFunc(l.topics, next, func(a, b popTopic) bool { return a.h == b.h })
	l.topics = next
	if !same {
		close(l.changed)
		l.changed = make(chan struct{})
	}
	l.mu.Unlock()
	if !same {
		w.interruptPops()
	}
}

// interruptPops ends the pops under way, so that they pop again with the
// lists as they are now.
func (w *Worker) interruptPops() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, g := range w.st.PopGroups() {
		if err := w.st.Interrupt(ctx, g); err != nil {
			w.log.Debug("interrupt a pop; it ends at its timeout", "shards", g, "err", err)
		}
	}
}

// pop is the pop loop of a group of shards: it takes the jobs pushed onto
// their ready lists of the topics known, as many at once as the holder
// has room for, and starts them (start), until ctx ends. A topic whose due
// jobs already wait for all its callback slots (busy) is left out of the
// pop until they are taken: when they are, the pop under way is
// interrupted so that the next one covers it again at once, rather than
// when the blocking pop of the other topics' lists ends. The lists are
// tried in turn, first to last, so that no topic's list is always tried
// last.
func (w *Worker) pop(ctx context.Context, group []int) {
	var startWG sync.WaitGroup
	defer startWG.Wait()
	starts := make(chan struct{}, popStarts)
	errDelay := 100 * time.Millisecond
	for turn := 0; ctx.Err() == nil; turn++ {
		l := &w.lists
		l.mu.Lock()
		topics, changed := l.topics, l.changed
		l.mu.Unlock()
		refill := w.hold.refillSignal()
		hs := make([]string, 0, len(topics))
		busy := false
		for i := range topics {
			t := topics[(i+turn)%len(topics)]
			if w.hold.busy(t.tenant, t.name, t.concurrency) {
				busy = true
				continue
			}
			hs = append(hs, t.h)
		}
		room := w.hold.capacity()
		if room <= 0 || len(hs) == 0 {
			wait := time.Duration(0) // until the topics change
			if room <= 0 || busy {
				wait = busyWait
			}
			w.idle(ctx, changed, refill, wait)
			continue
		}
		stopWatch := func() {}
		if busy {
			stopWatch = w.interruptOn(ctx, refill, group)
		}
		began := time.Now()
		cs, err := w.st.Pop(ctx, group, hs, min(room, popBatch), w.cfg.Wait)
		stopWatch()
		if len(cs) > 0 {
			// the start runs beside the next pop: a burst's pops follow
			// one another without waiting for each start's round trip
			starts <- struct{}{}
			startWG.Go(func() {
				defer func() { <-starts }()
				w.start(ctx, began, cs)
			})
		}
		if err == nil {
			errDelay = 100 * time.Millisecond
			continue
		}
		if ctx.Err() != nil {
			return
		}
		w.log.Warn("pop ready jobs", "shards", group, "err", err)
		w.idle(ctx, nil, nil, errDelay)
		errDelay = min(2*errDelay, popErrMax)
	}
}

// start starts the jobs a pop took at began (Store.Start: a job fires
// only once started), and hands those it started to the flow client to
// pace, then to the holder to hold until due.
func (w *Worker) start(ctx context.Context, began time.Time, cs []kairos.Claimed) {
	started, err := w.st.Start(ctx, cs) // repeated through an outage, not past the worker's stop
	if err != nil {
		w.log.Warn("start popped jobs; they are pushed again when their pop leases lapse", "jobs", len(cs)-len(started), "err", err)
	}
	if len(started) == 0 {
		return
	}
	w.tracePop(ctx, began, started)
	ctx = context.WithoutCancel(ctx)
	w.hold.add(ctx, w.flow.pace(ctx, started))
}

// popErrMax is the longest a pop loop waits after a failed pop: short, so
// that the jobs due while Redis was away go out soon after it is back.
const popErrMax = time.Second

// interruptOn interrupts the pop of group under way (Store.Interrupt) when
// refill closes, until the returned stop is called: a busy topic left out
// of that pop has room for more of its jobs.
func (w *Worker) interruptOn(ctx context.Context, refill <-chan struct{}, group []int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-refill:
		case <-done:
			return
		case <-ctx.Done():
			return
		}
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := w.st.Interrupt(ictx, group); err != nil && ctx.Err() == nil {
			w.log.Debug("interrupt a pop for a busy topic's refill; it ends at its timeout", "shards", group, "err", err)
		}
	})
	return func() { close(done); wg.Wait() }
}

// idle waits until ctx ends, changed or refill is closed, room frees in
// the holder, or wait passes (0: no limit).
func (w *Worker) idle(ctx context.Context, changed, refill <-chan struct{}, wait time.Duration) {
	var after <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-ctx.Done():
	case <-changed:
	case <-refill:
	case <-w.hold.roomFreed():
	case <-after:
	}
}
