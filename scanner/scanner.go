// Package scanner claims due jobs from the timing wheel's shards and hands
// them to a dispatch function (the process's own workers, or the ready lists
// of workers elsewhere). Each shard is scanned by one instance at a time,
// the one holding its redsync lock; instances share the shards fairly and
// take over a dead instance's shards when its locks expire.
package scanner

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/tracing"
)

// Config tunes a Scanner. Zero values take the defaults.
type Config struct {
	ID      string        // instance id, unique per process
	LockTTL time.Duration // shard lock expiry; default 10s
	Batch   int           // jobs moved per script call; default 500
	// MaxSleep is the longest sleep with nothing due; default and at most
	// rdb.WakeHorizon, since jobs due later than that wake no scanner.
	MaxSleep time.Duration
	// Ahead is how long before their due time jobs are claimed; they are
	// held until then by whoever Dispatch gives them to. Default 20ms.
	Ahead time.Duration
	// Dispatch takes the jobs each claim hands out (required).
	Dispatch func(context.Context, []rdb.Claimed)
	// Capacity, if set, says how many more jobs Dispatch can take now; the
	// scanner claims no more than that.
	Capacity func() int
	// LeaseTimeout, if set, gives the callback timeout that leases cover
	// for jobs that set none: the longest of the topics'. Default
	// kairos.DefaultTimeout.
	LeaseTimeout func() time.Duration
	Logger       *slog.Logger
	// Tracer traces claims that take jobs (internal/tracing); nil does not.
	Tracer trace.TracerProvider
}

// Scanner claims due jobs of the shards it holds.
type Scanner struct {
	store  *rdb.Store
	rs     *redsync.Redsync
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer

	mu   sync.Mutex
	held map[int]*shard
	// lost holds, by token, the claims whose reply was lost (a timeout, a
	// dropped connection): their jobs may be claimed, and are recovered by
	// repeating them (rdb.Store.ClaimDueOnce), by the shard's next pass
	// here or, when this instance no longer holds the shard, by
	// recoverLost.
	lost map[string]lostClaim
}

// lostClaim is a claim of a shard whose reply was lost.
type lostClaim struct {
	shard int
	tok   rdb.ClaimToken
	since time.Time
}

type shard struct {
	n      int
	mutex  *redsync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{} // signals that wakeAt holds a wake-up
	// extended is when the lock was last taken or extended (balance's
	// goroutine only).
	extended time.Time

	wakeMu sync.Mutex
	wakeAt time.Time // the earliest wake-up not yet taken by the loop
}

// notify records a wake-up: a claim at at (on the Redis clock). Wake-ups coalesce to the earliest, so
// a burst of them can never hide an earlier one behind a later one.
func (sh *shard) notify(at time.Time) {
	sh.wakeMu.Lock()
	if sh.wakeAt.IsZero() || at.Before(sh.wakeAt) {
		sh.wakeAt = at
	}
	sh.wakeMu.Unlock()
	select {
	case sh.wake <- struct{}{}:
	default:
	}
}

// takeWake returns and clears the earliest pending wake-up.
func (sh *shard) takeWake() time.Time {
	sh.wakeMu.Lock()
	defer sh.wakeMu.Unlock()
	at := sh.wakeAt
	sh.wakeAt = time.Time{}
	return at
}

// New returns a Scanner over store, locking shards with rs.
func New(store *rdb.Store, rs *redsync.Redsync, cfg Config) *Scanner {
	if cfg.LockTTL <= 0 {
		cfg.LockTTL = 10 * time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 500
	}
	if cfg.MaxSleep <= 0 || cfg.MaxSleep > rdb.WakeHorizon {
		cfg.MaxSleep = rdb.WakeHorizon
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Ahead <= 0 {
		cfg.Ahead = 20 * time.Millisecond
	}
	if cfg.LeaseTimeout == nil {
		cfg.LeaseTimeout = func() time.Duration { return kairos.DefaultTimeout }
	}
	if cfg.ID == "" {
		cfg.ID = randomID()
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider()
	}
	return &Scanner{store: store, rs: rs, cfg: cfg, log: cfg.Logger.With("component", "scanner", "instance", cfg.ID), held: map[int]*shard{},
		lost: map[string]lostClaim{}, tracer: cfg.Tracer.Tracer(tracing.Scope)}
}

// Held returns the shards this instance holds now.
func (s *Scanner) Held() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, 0, len(s.held))
	for n := range s.held {
		out = append(out, n)
	}
	return out
}

// Run scans until ctx ends, then stops claiming, releases its locks and
// leaves the set of live instances. It returns nil on a clean stop.
func (s *Scanner) Run(ctx context.Context) error {
	wakes := s.store.SubscribeWake(ctx)
	// Extend and rebalance twice per lock TTL: an extend that is late by
	// half the TTL still keeps the lock, and an idle process costs Redis
	// few commands.
	tick := time.NewTicker(s.cfg.LockTTL / 2)
	defer tick.Stop()
	lastSync := time.Now()
	var recoverWG sync.WaitGroup
	recoverWG.Go(func() { s.recoverLost(ctx) })
	s.balance(ctx)
	for {
		select {
		case <-ctx.Done():
			recoverWG.Wait()
			s.stop()
			return nil
		case w, ok := <-wakes:
			if !ok {
				wakes = nil
				continue
			}
			s.mu.Lock()
			if w.All { // wake-ups may have been lost: every shard claims now
				for _, sh := range s.held {
					sh.notify(s.store.Now())
				}
			} else if sh := s.held[w.Shard]; sh != nil {
				at := w.At // outcomes: apply by then
				if !w.Outcomes {
					at = at.Add(-s.ahead(sh.n)) // a slot: claim it ahead
				}
				sh.notify(at)
			}
			s.mu.Unlock()
		case <-tick.C:
			if time.Since(lastSync) > 30*time.Second {
				if err := s.store.SyncClock(ctx); err == nil {
					lastSync = time.Now()
				}
			}
			s.balance(ctx)
		}
	}
}

// balance extends the locks held, then gives up or takes shards so that
// the live instances hold about shards/instances each: an instance above
// its share, or two or more above the least loaded one, gives one shard
// back per round; one below its share takes free shards.
func (s *Scanner) balance(ctx context.Context) {
	s.mu.Lock()
	held := make([]*shard, 0, len(s.held))
	for _, sh := range s.held {
		held = append(held, sh)
	}
	s.mu.Unlock()
	for _, sh := range held {
		ok, err := sh.mutex.ExtendContext(ctx)
		switch {
		case ok && err == nil:
			sh.extended = time.Now()
		case ctx.Err() != nil:
			return
		case unanswered(err) && time.Since(sh.extended) < s.cfg.LockTTL*3/4:
			// Redis did not answer (a reset connection, a partition): the
			// lock is still this instance's until its TTL, so the shard
			// keeps being scanned and the next round extends it. Dropping
			// it would leave it unscanned until the lock expired.
			s.log.Warn("extend shard lock; keeping the shard while the lock lasts", "shard", sh.n, "err", err)
		default:
			s.log.Warn("lost shard lock", "shard", sh.n, "err", err)
			s.drop(sh, false)
		}
	}
	s.mu.Lock()
	n := len(s.held)
	s.mu.Unlock()

	counts, err := s.store.Heartbeat(ctx, s.cfg.ID, n, s.cfg.LockTTL)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("heartbeat", "err", err)
		}
		counts = map[string]int{s.cfg.ID: n}
	}
	live := max(len(counts), 1)
	total := s.store.Shards()
	share := (total + live - 1) / live
	least := n
	for id, c := range counts {
		if id != s.cfg.ID {
			least = min(least, c)
		}
	}
	if n > share || (n >= 2 && n-least >= 2 && n >= total/live+1) {
		// Give one shard back per round, so that instances converge without churn.
		s.mu.Lock()
		var give *shard
		for _, sh := range s.held {
			if give == nil || sh.n > give.n {
				give = sh
			}
		}
		s.mu.Unlock()
		s.log.Info("releasing shard for a fair share", "shard", give.n, "held", n, "live", live, "share", share)
		s.drop(give, true)
		return
	}
	for _, i := range rand.Perm(total) {
		if n >= share || ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		_, mine := s.held[i]
		s.mu.Unlock()
		if mine {
			continue
		}
		// redsync's default per-call timeout (5% of the expiry, tuned for
		// Redlock over many nodes) is too tight for one busy Redis or a
		// cluster dialling a new node; a fifth of the expiry keeps the lock safe.
		m := s.rs.NewMutex(s.store.LockName(i), redsync.WithExpiry(s.cfg.LockTTL), redsync.WithTries(1), redsync.WithTimeoutFactor(0.2))
		if err := m.TryLockContext(ctx); err != nil {
			var taken *redsync.ErrTaken
			if !errors.As(err, &taken) && !errors.Is(err, redsync.ErrFailed) && ctx.Err() == nil {
				s.log.Warn("lock shard", "shard", i, "err", err)
			}
			continue
		}
		s.take(ctx, i, m)
		n++
	}
}

func (s *Scanner) take(ctx context.Context, n int, m *redsync.Mutex) {
	sctx, cancel := context.WithCancel(ctx)
	sh := &shard{n: n, mutex: m, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1), extended: time.Now()}
	s.mu.Lock()
	s.held[n] = sh
	count := len(s.held)
	s.mu.Unlock()
	s.log.Info("took shard", "shard", n, "held", count)
	go func() {
		defer close(sh.done)
		s.scan(sctx, sh)
	}()
}

// drop stops scanning a shard and, when unlock is set, releases its lock.
func (s *Scanner) drop(sh *shard, unlock bool) {
	s.mu.Lock()
	delete(s.held, sh.n)
	count := len(s.held)
	s.mu.Unlock()
	s.log.Debug("dropped shard", "shard", sh.n, "held", count)
	sh.cancel()
	<-sh.done
	if unlock {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := sh.mutex.UnlockContext(ctx); err != nil {
			s.log.Debug("unlock shard", "shard", sh.n, "err", err)
		}
	}
}

// stop ends every shard loop and releases every lock.
func (s *Scanner) stop() {
	s.mu.Lock()
	held := make([]*shard, 0, len(s.held))
	for _, sh := range s.held {
		held = append(held, sh)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, sh := range held {
		wg.Go(func() { s.drop(sh, true) })
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.store.Leave(ctx, s.cfg.ID)
	s.log.Info("scanner stopped", "released", len(held))
}

// scan is one shard's loop: claim what is due, then sleep until the
// earliest job left is due or a wake-up says an earlier one arrived.
func (s *Scanner) scan(ctx context.Context, sh *shard) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var planned time.Time // on the Redis clock
	for {
		select {
		case <-ctx.Done():
			return
		case <-sh.wake:
			at := sh.takeWake()
			if !at.IsZero() && (planned.IsZero() || at.Before(planned)) {
				planned = at
				timer.Reset(time.Until(s.store.Local(at)))
			}
			continue
		case <-timer.C:
		}
		c, err := s.pass(ctx, sh.n)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("claim", "shard", sh.n, "err", err)
			planned = time.Time{}
			timer.Reset(250 * time.Millisecond)
			continue
		}
		if c.Refills > 0 {
			if err := s.store.RefillSchedules(context.WithoutCancel(ctx), sh.n, refillBatch); err != nil {
				s.log.Warn("refill schedules", "shard", sh.n, "err", err)
			}
		}
		// Sleep until the earliest slot left is due to be claimed, measured
		// on the Redis clock the claim itself used: no clock offset enters
		// the timer.
		wait := s.cfg.MaxSleep
		if ahead := s.ahead(sh.n); !c.Next.IsZero() && c.Next.Sub(c.Now)-ahead < wait {
			wait = max(c.Next.Sub(c.Now)-ahead, 0)
		}
		planned = s.store.Now().Add(wait)
		timer.Reset(wait)
	}
}

// pass claims due jobs in batches until fewer than a batch are due, and
// dispatches each batch. Claims run on a context that shutdown does not
// cancel mid-call, so claimed jobs are always dispatched.
//
// A pass's first claim takes at most firstBatch jobs: when many shards come
// due at the same instant, their first jobs are dispatched after a few
// short scripts rather than after every shard's full batch. When Dispatch
// can take no more, the pass ends and looks again shortly.
func (s *Scanner) pass(ctx context.Context, n int) (rdb.Claim, error) {
	limit := min(s.cfg.Batch, firstBatch)
	for {
		want := limit
		if s.cfg.Capacity != nil {
			want = min(want, s.cfg.Capacity())
		}
		if want <= 0 {
			now := s.store.Now()
			return rdb.Claim{Now: now, Next: now.Add(s.ahead(n) + fullRetry)}, nil
		}
		began := time.Now()
		l, ok := s.takeLost(n)
		if !ok {
			l = lostClaim{shard: n, tok: rdb.NewClaimToken(), since: began}
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		c, err := s.store.ClaimDueOnce(cctx, l.tok, n, want, s.ahead(n), s.cfg.LeaseTimeout())
		cancel()
		if err != nil && c.Now.IsZero() {
			l.tok.Repeat = true // no reply: the call may have claimed jobs
			s.putLost(l)
		} else if l.tok.Repeat {
			s.logRecovered(n, len(c.Jobs))
		}
		if len(c.Jobs) > 0 {
			s.traceClaim(ctx, n, began, c.Jobs)
			s.log.Debug("claimed", "shard", n, "jobs", len(c.Jobs))
			s.cfg.Dispatch(context.WithoutCancel(ctx), c.Jobs)
		}
		if err != nil {
			return rdb.Claim{}, err
		}
		if len(c.Jobs) < want || ctx.Err() != nil {
			return c, nil
		}
		limit = s.cfg.Batch
	}
}

// unanswered reports whether a lock call failed because Redis did not
// answer, rather than because another instance holds the lock.
func unanswered(err error) bool {
	var taken *redsync.ErrTaken
	var re *redsync.RedisError
	return !errors.As(err, &taken) && errors.As(err, &re)
}

// takeLost takes a lost claim of shard n, if any, to be repeated.
func (s *Scanner) takeLost(n int) (lostClaim, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, l := range s.lost {
		if l.shard == n {
			delete(s.lost, id)
			return l, true
		}
	}
	return lostClaim{}, false
}

// putLost records (or puts back) a claim whose reply was lost.
func (s *Scanner) putLost(l lostClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost[l.tok.ID] = l
}

// recoverLost repeats, until Redis answers, the lost claims of shards this
// instance no longer holds (it lost their locks while Redis was away), and
// dispatches the jobs they had claimed; a shard still held repeats its own
// in its next pass. Repeats claim nothing new (limit 0), so they need no
// lock. A claim still unanswered after lostGiveUp is given up: its jobs
// wait for their leases.
func (s *Scanner) recoverLost(ctx context.Context) {
	tick := time.NewTicker(lostRetry)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			if len(s.lost) > 0 {
				s.log.Warn("stopping with claims whose replies were lost: their jobs are handed out again when their leases lapse", "claims", len(s.lost))
			}
			s.mu.Unlock()
			return
		case <-tick.C:
		}
		s.mu.Lock()
		var todo []lostClaim
		for id, l := range s.lost {
			if s.held[l.shard] != nil {
				continue
			}
			delete(s.lost, id) // taken
			if time.Since(l.since) > lostGiveUp {
				s.log.Warn("giving up a claim whose reply was lost: its jobs are handed out again when their leases lapse", "shard", l.shard)
				continue
			}
			todo = append(todo, l)
		}
		s.mu.Unlock()
		for _, l := range todo {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			c, err := s.store.ClaimDueOnce(cctx, l.tok, l.shard, 0, 0, s.cfg.LeaseTimeout())
			cancel()
			if err != nil && c.Now.IsZero() {
				s.putLost(l)
				continue
			}
			s.logRecovered(l.shard, len(c.Jobs))
			if len(c.Jobs) > 0 {
				s.cfg.Dispatch(context.WithoutCancel(ctx), c.Jobs)
			}
		}
	}
}

func (s *Scanner) logRecovered(n, jobs int) {
	level := slog.LevelDebug // the lost call claimed nothing
	if jobs > 0 {
		level = slog.LevelInfo
	}
	s.log.Log(context.Background(), level, "recovered the jobs of a claim whose reply was lost", "shard", n, "jobs", jobs)
}

// lostRetry is how often a lost claim of a shard not held is repeated;
// lostGiveUp how long it is repeated.
const (
	lostRetry  = 250 * time.Millisecond
	lostGiveUp = 10 * time.Minute
)

// ahead is how long before their due time shard n's jobs are claimed: Ahead,
// plus a phase that spreads the shards' claims evenly over the wheel's
// narrowest slot. Slots start at the same instants in every shard, so
// without it every shard's claim would come at one moment, a burst of
// Redis and process work that delays the jobs firing then (measured with
// the load tool's precision scenario: p99 lateness 5.7-7.2 ms with one
// phase, 1.8-2.1 ms with one a shard).
func (s *Scanner) ahead(n int) time.Duration {
	shards := time.Duration(s.store.Shards())
	return s.cfg.Ahead + rdb.SlotWidth*(time.Duration(n)%shards)/shards
}

// refillBatch is how many schedules a shard's loop refills after a claim.
const refillBatch = 100

// fullRetry is how soon a pass that found Dispatch full looks again.
const fullRetry = 20 * time.Millisecond

const firstBatch = 50

func randomID() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 10)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}

// traceClaim records a claim that took jobs as a consumer span linking
// each job's create; claims that take none leave no span.
func (s *Scanner) traceClaim(ctx context.Context, n int, began time.Time, jobs []rdb.Claimed) {
	_, span := s.tracer.Start(ctx, "claim", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(began),
		trace.WithNewRoot())
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(semconv.MessagingSystemKey.String(tracing.System), semconv.MessagingOperationTypeReceive,
		semconv.MessagingOperationName("claim"), semconv.MessagingBatchMessageCount(len(jobs)), attribute.Int("kairos.shard", n))
	for _, c := range jobs {
		if sc := tracing.SpanContext(c.Job.TraceParent, c.Job.TraceState); sc.IsValid() {
			span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{semconv.MessagingMessageID(c.Job.ID)}})
		}
	}
	span.End()
}
