// Package dispatch holds the jobs a process has claimed until their due
// time and hands them to its workers. Claims start each job's attempt and
// may run a few milliseconds ahead of its due time (one claim then serves
// many jobs); a Dispatcher makes sure that none fires before its due time on
// the Redis clock, and gives back (releases) what it cannot start in time,
// so a job held here keeps its place and loses no attempt.
package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// Config tunes a Dispatcher. Zero values take the defaults.
type Config struct {
	// Hold is how long past its due time a job may wait for a free worker
	// before it is released; keep it below the store's ready lease, which
	// its lease allows for. Default half the default ready lease.
	Hold time.Duration
	// MaxHeld bounds the jobs held (waiting for their due time or for a
	// worker): Capacity says how many more a claim may take. Default 5000.
	MaxHeld int
	// Remote makes Next take jobs from the topics' ready lists (filled by
	// scanner-only processes) when nothing claimed here is waiting.
	Remote bool
	Logger *slog.Logger
}

// Dispatcher is the store as the workers see it: Next hands out claimed
// jobs at their due time. It is safe for concurrent use.
type Dispatcher struct {
	*rdb.Store
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	topics map[string]*queue // "tenant/topic"
	timers map[*time.Timer]rdb.Claimed
	held   int
	closed bool
}

// queue is one topic's jobs whose due time has come, oldest due first.
type queue struct {
	ready  []rdb.Claimed
	signal chan struct{} // a nudge when ready grows
}

// New returns a Dispatcher over store.
func New(store *rdb.Store, cfg Config) *Dispatcher {
	if cfg.Hold <= 0 {
		cfg.Hold = rdb.DefaultReadyLease / 2
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = 5000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{Store: store, cfg: cfg, log: cfg.Logger.With("component", "dispatch"),
		topics: map[string]*queue{}, timers: map[*time.Timer]rdb.Claimed{}}
}

// Capacity returns how many more jobs the dispatcher can hold now.
func (d *Dispatcher) Capacity() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.MaxHeld - d.held
}

// Held returns how many jobs it holds now.
func (d *Dispatcher) Held() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.held
}

// Add takes claimed jobs: each becomes available to Next once the Redis
// clock reaches its due time. After Close, they are released at once.
func (d *Dispatcher) Add(ctx context.Context, cs []rdb.Claimed) {
	now := d.Now()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.release(ctx, cs)
		return
	}
	d.held += len(cs)
	for _, c := range cs {
		fire := c.FireAt
		if fire.IsZero() {
			fire = d.Local(c.Due)
		}
		if !c.Due.After(now) && !fire.After(time.Now()) {
			d.readyLocked(c)
			continue
		}
		d.timerLocked(c, time.Until(fire))
	}
	d.mu.Unlock()
}

// timerLocked makes c ready after wait.
func (d *Dispatcher) timerLocked(c rdb.Claimed, wait time.Duration) {
	var t *time.Timer
	t = time.AfterFunc(wait, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if _, ok := d.timers[t]; !ok {
			return // Close took it
		}
		delete(d.timers, t)
		d.readyLocked(c)
	})
	d.timers[t] = c
}

func (d *Dispatcher) queueLocked(tenant, topic string) *queue {
	name := tenant + "/" + topic
	q := d.topics[name]
	if q == nil {
		q = &queue{signal: make(chan struct{}, 1)}
		d.topics[name] = q
	}
	return q
}

func (d *Dispatcher) readyLocked(c rdb.Claimed) {
	q := d.queueLocked(c.Job.Tenant, c.Job.Topic)
	q.ready = append(q.ready, c)
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// Next hands out up to n of a topic's jobs whose due time has come,
// waiting up to wait for one. Jobs that waited past their due time longer
// than Config.Hold are released instead (their claim's lease would lapse
// while they ran). With Config.Remote it also takes the topic's ready list.
func (d *Dispatcher) Next(ctx context.Context, tenant, topic string, n int, wait, _ time.Duration) ([]kairos.Job, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		jobs, overdue, q := d.take(tenant, topic, n)
		if len(overdue) > 0 {
			d.release(context.WithoutCancel(ctx), overdue)
		}
		if len(jobs) > 0 {
			return jobs, nil
		}
		if d.cfg.Remote {
			cs, err := d.PopReady(ctx, tenant, topic, n, wait)
			if err != nil && !errors.Is(err, rdb.ErrNoJob) {
				return nil, err
			}
			if len(cs) > 0 {
				d.Add(context.WithoutCancel(ctx), cs)
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-deadline.C:
			return nil, nil
		case <-q.signal:
		}
	}
}

// take removes up to n ready jobs of a topic, and those overdue.
func (d *Dispatcher) take(tenant, topic string, n int) (jobs []kairos.Job, overdue []rdb.Claimed, q *queue) {
	now := d.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	q = d.queueLocked(tenant, topic)
	i := 0
	for ; i < len(q.ready) && len(jobs) < n; i++ {
		c := q.ready[i]
		if now.Sub(c.Due) > d.cfg.Hold {
			overdue = append(overdue, c)
			continue
		}
		jobs = append(jobs, c.Job)
	}
	q.ready = q.ready[i:]
	d.held -= len(jobs) + len(overdue)
	if len(q.ready) > 0 { // more for the next caller
		select {
		case q.signal <- struct{}{}:
		default:
		}
	}
	return jobs, overdue, q
}

func (d *Dispatcher) release(ctx context.Context, cs []rdb.Claimed) {
	if len(cs) == 0 {
		return
	}
	// Releasing a job twice is harmless (the second finds it no longer
	// claimed), so a release whose answer was lost is tried again, for a
	// while, before its jobs are left to their leases.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := d.Release(ctx, cs)
		if err == nil {
			d.log.Debug("released held jobs", "jobs", len(cs))
			return
		}
		select {
		case <-ctx.Done():
			d.log.Warn("release held jobs; they are handed out again when their leases lapse", "jobs", len(cs), "err", err)
			return
		case <-time.After(wait):
		}
	}
}

// Close stops holding: every job not handed out yet is released, so that
// another process fires it without waiting for its lease. Jobs added later
// are released at once.
func (d *Dispatcher) Close(ctx context.Context) {
	d.mu.Lock()
	d.closed = true
	var rest []rdb.Claimed
	for t, c := range d.timers {
		t.Stop()
		rest = append(rest, c)
	}
	d.timers = map[*time.Timer]rdb.Claimed{}
	for _, q := range d.topics {
		rest = append(rest, q.ready...)
		q.ready = nil
	}
	d.held = 0
	d.mu.Unlock()
	d.release(ctx, rest)
	if len(rest) > 0 {
		d.log.Info("released held jobs at shutdown", "jobs", len(rest))
	}
}
