// Package bulk runs bulk operations (cancel or replay the jobs of a topic
// that a filter selects) in the background, in batches, in whichever API
// process holds an operation's lease. An operation outlives the process
// that started it: its lease lapses, and another process takes it over
// where its walk stood. A tenant runs at most rdb.TenantRunningOps at once
// (the others wait, queued), and every operation is paced: one batch of a
// process's operations runs at a time, and an operation rests at least as
// long as its batch took before the next, so that bulk work leaves Redis
// to every tenant's deliveries.
package bulk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// Store is what a Runner needs of the data model (rdb.Store).
type Store interface {
	CreateOperation(ctx context.Context, op rdb.Operation, owner string, lease time.Duration) (rdb.Operation, []string, error)
	GetOperation(ctx context.Context, id string) (rdb.Operation, error)
	AdoptOperation(ctx context.Context, id, owner string, lease time.Duration) (bool, error)
	OrphanedOperations(ctx context.Context, limit int) ([]string, error)
	BulkBatch(ctx context.Context, op rdb.Operation, cursor string, n int) (rdb.Step, error)
	GetQuota(ctx context.Context, tenant string) (kairos.QuotaOverride, bool, error)
	TenantPending(ctx context.Context, tenant string) (int64, error)
	RecordStep(ctx context.Context, tenant, id, owner string, lease time.Duration, step rdb.Step) (bool, []string, error)
}

// Config tunes a Runner; zero fields take the defaults.
type Config struct {
	// Batch is how many index entries one batch walks (default 100: one
	// pipeline of actions).
	Batch int
	// Pause is the least rest between two batches of an operation
	// (default 10ms); it rests at least as long as its batch took, too, so
	// that an operation keeps Redis busy half the time at most, and the
	// deliveries due meanwhile go first.
	Pause time.Duration
	// Lease is how long an operation stays with its runner after its last
	// batch (default 10s): a runner that died leaves it to another after
	// that long.
	Lease time.Duration
	// Poll, when above zero, is how often the runner looks for operations
	// whose runner died. Zero looks once at start and then only when told
	// of one (Runner.Kick): a process that otherwise sends Redis nothing at
	// idle stays silent.
	Poll time.Duration
	// Quota is the deployment's default tenant quota: a replay does not
	// take a tenant past its max_pending, as a single replay does not.
	Quota  kairos.Quota
	Logger *slog.Logger
}

// Runner runs the bulk operations this process holds.
type Runner struct {
	store Store
	cfg   Config
	log   *slog.Logger
	owner string
	kicks chan string

	mu     sync.Mutex
	active map[string]bool
	// lane lets one batch of this runner's operations run at a time.
	lane sync.Mutex
}

// New returns a Runner over store; Run runs it.
func New(store Store, cfg Config) *Runner {
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.Pause <= 0 {
		cfg.Pause = 10 * time.Millisecond
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var b [8]byte
	rand.Read(b[:])
	return &Runner{store: store, cfg: cfg, log: cfg.Logger.With("component", "bulk"), owner: hex.EncodeToString(b[:]),
		kicks: make(chan string, 64), active: map[string]bool{}}
}

// Create stores op as a new operation held by this runner, and starts it,
// or leaves it queued when its tenant runs as many as it may already.
func (r *Runner) Create(ctx context.Context, op rdb.Operation) (rdb.Operation, error) {
	op, started, err := r.store.CreateOperation(ctx, op, r.owner, r.cfg.Lease)
	if err != nil {
		return rdb.Operation{}, err
	}
	for _, id := range started {
		r.Kick(id)
	}
	if op.State == rdb.OpRunning {
		r.Kick(op.ID)
	}
	return op, nil
}

// Kick asks the runner to run operation id if it holds it or its lease
// lapsed; it does not wait.
func (r *Runner) Kick(id string) {
	select {
	case r.kicks <- id:
	default: // the runner is busy starting others; a later look finds it
	}
}

// Run runs operations until ctx ends, and waits for their batches in
// flight to finish.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	r.orphans(ctx, &wg)
	var tick <-chan time.Time
	if r.cfg.Poll > 0 {
		t := time.NewTicker(r.cfg.Poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-r.kicks:
			r.launch(ctx, &wg, id)
		case <-tick:
			r.orphans(ctx, &wg)
		}
	}
}

// orphans takes over the operations whose runner died.
func (r *Runner) orphans(ctx context.Context, wg *sync.WaitGroup) {
	ids, err := r.store.OrphanedOperations(ctx, 16)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("look for orphaned operations", "err", err)
		}
		return
	}
	for _, id := range ids {
		r.launch(ctx, wg, id)
	}
}

// launch runs operation id in a goroutine of its own when this runner
// holds it, or takes it because its lease lapsed.
func (r *Runner) launch(ctx context.Context, wg *sync.WaitGroup, id string) {
	r.mu.Lock()
	if r.active[id] {
		r.mu.Unlock()
		return
	}
	r.active[id] = true
	r.mu.Unlock()
	ok, err := r.store.AdoptOperation(ctx, id, r.owner, r.cfg.Lease)
	if err != nil || !ok {
		if err != nil && ctx.Err() == nil {
			r.log.Warn("take operation", "operation", id, "err", err)
		}
		r.mu.Lock()
		delete(r.active, id)
		r.mu.Unlock()
		return
	}
	wg.Go(func() {
		defer func() {
			r.mu.Lock()
			delete(r.active, id)
			r.mu.Unlock()
		}()
		r.run(ctx, wg, id)
	})
}

// run walks operation id batch by batch from where it stands, until it is
// done, another runner took it, or ctx ends (its lease then lapses, and
// another process goes on with it). The queued operations its end starts
// are launched in wg.
func (r *Runner) run(ctx context.Context, wg *sync.WaitGroup, id string) {
	op, err := r.store.GetOperation(ctx, id)
	if err != nil {
		r.log.Warn("read operation", "operation", id, "err", err)
		return
	}
	r.log.Info("operation running", "operation", id, "action", op.Action, "topic", op.Topic)
	cursor := op.Cursor
	for ctx.Err() == nil {
		op.Room, err = r.room(ctx, op)
		op.Limited = op.Room >= 0
		if err != nil {
			r.log.Warn("read the tenant's quota", "operation", id, "err", err)
			if !sleep(ctx, time.Second) {
				return
			}
			continue
		}
		step, took, err := r.batch(ctx, op, cursor)
		if err == nil && step.Uncounted != nil {
			r.log.Warn("count an operation's deliveries in their subscriptions' counts", "operation", id, "err", step.Uncounted)
		}
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("operation batch", "operation", id, "err", err)
			}
			if !sleep(ctx, time.Second) {
				return
			}
			// the lease is renewed by the next batch recorded; one that
			// lapses meanwhile hands the operation to another process
			continue
		}
		held, started, err := r.store.RecordStep(ctx, op.Tenant, id, r.owner, r.cfg.Lease, step)
		if err != nil {
			r.log.Warn("record operation batch", "operation", id, "err", err)
			if !sleep(ctx, time.Second) {
				return
			}
			continue // the batch is walked again: its actions are done, and match no more
		}
		if !held {
			r.log.Info("operation taken over", "operation", id)
			return
		}
		if step.Finished {
			r.log.Info("operation done", "operation", id)
			for _, next := range started {
				r.launch(ctx, wg, next)
			}
			return
		}
		cursor = step.Cursor
		if !sleep(ctx, max(r.cfg.Pause, took)) {
			return
		}
	}
}

// batch runs the next batch of op from cursor in the runner's lane, and
// says how long it took.
func (r *Runner) batch(ctx context.Context, op rdb.Operation, cursor string) (rdb.Step, time.Duration, error) {
	r.lane.Lock()
	defer r.lane.Unlock()
	start := time.Now()
	step, err := r.store.BulkBatch(ctx, op, cursor, r.cfg.Batch)
	return step, time.Since(start), err
}

// room is how many jobs the next batch of op may replay before its
// tenant's pending jobs reach max_pending: -1 (no limit) for a cancel or
// a tenant without one.
func (r *Runner) room(ctx context.Context, op rdb.Operation) (int64, error) {
	if op.Action != rdb.ActionReplay {
		return -1, nil
	}
	o, _, err := r.store.GetQuota(ctx, op.Tenant)
	if err != nil {
		return 0, err
	}
	q := o.Apply(r.cfg.Quota)
	if q.MaxPending <= 0 {
		return -1, nil
	}
	pending, err := r.store.TenantPending(ctx, op.Tenant)
	if err != nil {
		return 0, err
	}
	return max(q.MaxPending-pending, 0), nil
}

// sleep waits d or until ctx ends; false when it ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
