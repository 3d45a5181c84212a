package callback

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kairos-sh/kairos"
)

// holdStore is what the holder needs of the store: its clock, and Release
// for the jobs it gives back.
type holdStore interface {
	Now() time.Time
	Local(t time.Time) time.Time
	Release(ctx context.Context, cs []kairos.Claimed) error
}

// holdConfig tunes a holder. Zero values take the defaults.
type holdConfig struct {
	// MaxLate is how long past its due time a job may wait for its
	// topic's consumer before it is released: its claim's lease allows
	// for the store's ready lease, and a job held longer would lapse while
	// it ran. Default half kairos.DefaultReadyLease.
	MaxLate time.Duration
	// MaxHeld bounds the jobs held (waiting for their due time, for a
	// consumer, or to ask flow control again): the pops take no more.
	// Default 5000.
	MaxHeld int
	Logger  *slog.Logger
}

// holder holds the jobs the pops took until their due time on the Redis
// clock, and then in their topic's queue until its consumer takes them
// (take). Claims run a few milliseconds ahead of due times (one claim
// serves many jobs); the holder makes sure that none is handed out before
// its due time, and gives back (releases) what it cannot hand out in
// time, so a job held here keeps its place and loses no attempt. It
// bounds what it holds (MaxHeld): the pops ask it for room first
// (capacity, roomFreed), and leave out a topic whose due jobs already
// fill its callback slots until they are taken (busy, refillSignal).
// It is safe for concurrent use.
type holder struct {
	st  holdStore
	cfg holdConfig
	log *slog.Logger

	mu     sync.Mutex
	topics map[string]*queue                // "tenant/topic"
	timers map[*time.Timer][]kairos.Claimed // jobs waiting for a time: their due time, or their next ask (again)
	held   int
	closed bool
	room   chan struct{} // a nudge when held drops below MaxHeld
	// refill is closed, and replaced, when a topic the pops left out for
	// being busy has fewer due jobs waiting than its mark again
	refill chan struct{}
}

// newHolder returns a holder over st.
func newHolder(st holdStore, cfg holdConfig) *holder {
	if cfg.MaxLate <= 0 {
		cfg.MaxLate = kairos.DefaultReadyLease / 2
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = 5000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &holder{st: st, cfg: cfg, log: cfg.Logger.With("component", "hold"),
		topics: map[string]*queue{}, timers: map[*time.Timer][]kairos.Claimed{},
		room: make(chan struct{}, 1), refill: make(chan struct{})}
}

// capacity returns how many more jobs the holder can hold now.
func (h *holder) capacity() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg.MaxHeld - h.held
}

// roomFreed returns the channel that gets a nudge when the holder, full,
// has room again.
func (h *holder) roomFreed() <-chan struct{} { return h.room }

// add holds popped (and started) jobs: each is ready in its topic's queue
// once the Redis clock reaches its due time. After close, they are
// released at once.
func (h *holder) add(ctx context.Context, cs []kairos.Claimed) {
	now := h.st.Now()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.release(ctx, cs)
		return
	}
	h.held += len(cs)
	// jobs due at one instant (a burst, a cron minute) share a timer
	var later [][]kairos.Claimed
	var fires []time.Time
	group := map[int64]int{}
	for _, c := range cs {
		fire := c.FireAt
		if fire.IsZero() {
			fire = h.st.Local(c.Due)
		}
		if !c.Due.After(now) && !fire.After(time.Now()) {
			h.readyLocked(c)
			continue
		}
		i, ok := group[fire.UnixNano()]
		if !ok {
			i = len(later)
			group[fire.UnixNano()] = i
			later, fires = append(later, nil), append(fires, fire)
		}
		later[i] = append(later[i], c)
	}
	for i, g := range later {
		h.timerLocked(g, time.Until(fires[i]), false)
	}
	h.mu.Unlock()
}

// timerLocked makes cs ready after wait: at the end of their topics'
// queues, or ahead of them (front).
func (h *holder) timerLocked(cs []kairos.Claimed, wait time.Duration, front bool) *time.Timer {
	var t *time.Timer
	t = time.AfterFunc(wait, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		cs, ok := h.timers[t] // join may have added jobs
		if !ok {
			return // readyNow or close took them
		}
		delete(h.timers, t)
		if !front {
			for _, c := range cs {
				h.readyLocked(c)
			}
			return
		}
		h.frontLocked(cs)
	})
	h.timers[t] = cs
	return t
}

func (h *holder) queueLocked(tenant, topic string) *queue {
	name := tenant + "/" + topic
	q := h.topics[name]
	if q == nil {
		q = newQueue()
		h.topics[name] = q
	}
	return q
}

func (h *holder) readyLocked(c kairos.Claimed) {
	q := h.queueLocked(c.Job.Tenant, c.Job.Topic)
	q.put(c, false)
	q.nudge()
}

// frontLocked puts cs ahead of their topics' other ready jobs (of no
// higher priority), in order.
func (h *holder) frontLocked(cs []kairos.Claimed) {
	for i := len(cs) - 1; i >= 0; i-- {
		q := h.queueLocked(cs[i].Job.Tenant, cs[i].Job.Topic)
		q.put(cs[i], true)
		q.nudge()
	}
}

// ready returns the channel that gets a nudge when a topic's queue grows.
func (h *holder) ready(tenant, topic string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.queueLocked(tenant, topic).signal
}

// turn is taken across a take and its gate by the topic's consumer: a
// queue kept in priority order is taken and gated by one caller at a time,
// since two takes asking flow control at once could let the second one's
// job (of lower priority) have the flow's permit. It returns the call that
// gives the turn back; a queue in plain due order needs no turn.
func (h *holder) turn(tenant, topic string) (done func()) {
	h.mu.Lock()
	q := h.queueLocked(tenant, topic)
	ranked := q.ranked
	h.mu.Unlock()
	if !ranked {
		return func() {}
	}
	q.turn.Lock()
	return q.turn.Unlock
}

// take removes up to n of a topic's ready jobs and returns them. Jobs that
// waited past their due time longer than MaxLate are released instead
// (their claim's lease would lapse while they ran).
func (h *holder) take(ctx context.Context, tenant, topic string, n int) []kairos.Claimed {
	now := h.st.Now()
	var jobs, overdue []kairos.Claimed
	h.mu.Lock()
	q := h.queueLocked(tenant, topic)
	before := h.held
	i := 0
	for ; i < len(q.ready) && len(jobs) < n; i++ {
		c := q.ready[i]
		if now.Sub(c.Due) > h.cfg.MaxLate {
			overdue = append(overdue, c)
			continue
		}
		jobs = append(jobs, c)
	}
	q.ready = q.ready[i:]
	h.held -= len(jobs) + len(overdue)
	if before >= h.cfg.MaxHeld && h.held < h.cfg.MaxHeld {
		h.nudgeRoom()
	}
	if q.low > 0 && len(q.ready) < q.low {
		q.low = 0
		close(h.refill)
		h.refill = make(chan struct{})
	}
	if len(q.ready) > 0 { // more for the next caller
		q.nudge()
	}
	h.mu.Unlock()
	if len(overdue) > 0 {
		h.release(context.WithoutCancel(ctx), overdue)
	}
	return jobs
}

// again holds cs again, ahead of their topics' other ready jobs, after
// wait, all on one timer, which it returns. After close it releases them
// and returns nil.
func (h *holder) again(cs []kairos.Claimed, wait time.Duration) *time.Timer {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.release(context.Background(), cs)
		return nil
	}
	h.held += len(cs)
	t := h.timerLocked(cs, wait, true)
	h.mu.Unlock()
	return t
}

// join adds cs to the jobs held again on timer t (again), so that they
// come back together; false, holding nothing, when t's jobs came back
// already or the holder is closed.
func (h *holder) join(t *time.Timer, cs []kairos.Claimed) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.timers[t]
	if !ok || h.closed {
		return false
	}
	h.timers[t] = append(w, cs...)
	h.held += len(cs)
	return true
}

// readyNow makes the jobs held again on timer t ready at once, if they
// still wait: all under one lock, so that a take cannot find
// some of them back and not others (which would let a job of lower
// priority take a permit).
func (h *holder) readyNow(t *time.Timer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cs, ok := h.timers[t]; ok {
		t.Stop()
		delete(h.timers, t)
		h.frontLocked(cs)
	}
}

// release gives cs back to the store: each keeps its due time (or the
// later Due set) and loses no attempt.
func (h *holder) release(ctx context.Context, cs []kairos.Claimed) {
	if len(cs) == 0 {
		return
	}
	// Releasing a job twice is harmless (the second finds it no longer
	// claimed), so a release whose answer was lost is tried again, for a
	// while, before its jobs are left to their leases.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := h.st.Release(ctx, cs)
		if err == nil {
			h.log.Debug("released held jobs", "jobs", len(cs))
			return
		}
		select {
		case <-ctx.Done():
			h.log.Warn("release held jobs; they are handed out again when their leases lapse", "jobs", len(cs), "err", err)
			return
		case <-time.After(wait):
		}
	}
}

// nudgeRoom tells a pop waiting for room that there is some.
func (h *holder) nudgeRoom() {
	select {
	case h.room <- struct{}{}:
	default:
	}
}

// busy reports whether limit or more of a topic's jobs are due and wait
// for its consumer, so that the pops may leave it out. When it is, the
// channel refillSignal returns is closed once fewer than limit wait.
func (h *holder) busy(tenant, topic string, limit int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.topics[tenant+"/"+topic]
	if q == nil || len(q.ready) < limit {
		return false
	}
	q.low = limit
	return true
}

// refillSignal returns a channel closed when a topic found busy since the
// call has fewer due jobs waiting than its limit: the pops take it again.
// Take it before asking busy, so that no drain falls between the two.
func (h *holder) refillSignal() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refill
}

// waiting returns how many of a topic's jobs are due and wait for its
// consumer.
func (h *holder) waiting(tenant, topic string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.topics[tenant+"/"+topic]; q != nil {
		return len(q.ready)
	}
	return 0
}

// close stops holding: every job not handed out yet is released, so that
// another process fires it without waiting for its lease. Jobs added
// later are released at once.
func (h *holder) close(ctx context.Context) {
	h.mu.Lock()
	h.closed = true
	var rest []kairos.Claimed
	for t, cs := range h.timers {
		t.Stop()
		rest = append(rest, cs...)
	}
	h.timers = map[*time.Timer][]kairos.Claimed{}
	for _, q := range h.topics {
		rest = append(rest, q.ready...)
		q.ready = nil
	}
	h.held = 0
	h.mu.Unlock()
	h.nudgeRoom()
	h.release(ctx, rest)
	if len(rest) > 0 {
		h.log.Info("released held jobs at shutdown", "jobs", len(rest))
	}
}
