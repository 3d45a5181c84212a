// Package scanner claims due jobs from the timing wheel's shards and hands
// them to a dispatch function (the process's own workers, or the ready lists
// of workers elsewhere). Each shard is scanned by one instance at a time,
// the one whose lease holds it (rdb.LeaseView): an instance holds all its
// shards under one lease, renewed twice per lease length, so that an idle
// process costs Redis two commands per renewal whatever the shards held.
// Instances share the shards fairly and take over a dead instance's shards
// when its lease expires.
package scanner

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

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
	ID string // instance id, unique per process
	// LockTTL is the lease's length: a dead instance's shards are taken
	// over within it of its last renewal. Default 10s.
	LockTTL time.Duration
	Batch   int // jobs moved per script call; default 500
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
	// Wakes, if set, delivers the wake messages (rdb.Store.SubscribeWake)
	// the scanner acts on, so that a process subscribes once for all its
	// parts; nil makes Run subscribe itself.
	Wakes  <-chan rdb.Wake
	Logger *slog.Logger
	// Tracer traces claims that take jobs (internal/tracing); nil does not.
	Tracer trace.TracerProvider
}

// Scanner claims due jobs of the shards it holds.
type Scanner struct {
	store  *rdb.Store
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer

	mu      sync.Mutex
	held    map[int]*shard
	renewed time.Time      // when the lease was last renewed (local clock, taken before the call)
	view    *rdb.LeaseView // as the last renewal read it
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
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{} // signals that wakeAt holds a wake-up
	// extended is when the lock was last taken or extended (balance's
	// goroutine only).
	extended time.Time

	wakeMu sync.Mutex
	wakeAt time.Time // the earliest wake-up not yet taken by the loop
	passes int       // claim passes finished since the shard was taken
	next   time.Time // the earliest wheel slot left after the last pass (Redis clock); zero when none
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

// New returns a Scanner over store.
func New(store *rdb.Store, cfg Config) *Scanner {
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
	return &Scanner{store: store, cfg: cfg, log: cfg.Logger.With("component", "scanner", "instance", cfg.ID), held: map[int]*shard{},
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

// clockSync is how often the offset from Redis's clock is measured again
// (three TIME commands).
const clockSync = 5 * time.Minute

// Run scans until ctx ends, then stops claiming and gives its shards and
// its lease back. It returns nil on a clean stop.
func (s *Scanner) Run(ctx context.Context) error {
	wakes := s.cfg.Wakes
	if wakes == nil {
		wakes = s.store.SubscribeWake(ctx)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	lastSync := time.Now()
	var recoverWG sync.WaitGroup
	recoverWG.Go(func() { s.recoverLost(ctx) })
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
			s.Wake(w)
		case <-timer.C:
			if time.Since(lastSync) > clockSync {
				if err := s.store.SyncClock(ctx); err == nil {
					lastSync = time.Now()
				}
			}
			timer.Reset(s.balance(ctx))
		}
	}
}

// Wake acts on a wake message: a shard held here claims by its time; after
// a (re)subscription, when messages may have been lost, every shard held
// claims now. Topic changes and ready lists are not the scanner's.
func (s *Scanner) Wake(w rdb.Wake) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case w.Topics || w.Ready != "":
	case w.Resubscribed:
		now := s.store.Now()
		for _, sh := range s.held {
			sh.notify(now)
		}
	default:
		if sh := s.held[w.Shard]; sh != nil {
			at := w.At // outcomes: apply by then
			if !w.Outcomes {
				at = at.Add(-s.ahead(sh.n)) // a slot: claim it ahead
			}
			sh.notify(at)
		}
	}
}

// balance renews the lease, drops the shards another instance took over,
// then gives shards back or takes free ones so that the live instances hold
// about shards/instances each: an instance above its share, or two or more
// above the least loaded one, gives shards back; one below its share takes
// free shards (held by no one, or under an expired lease). It returns when
// to balance next: half the lease's length, or sooner when another
// instance's lease expires before then (it may have died: its shards are
// then taken over at once, within the lease's length of its last renewal).
func (s *Scanner) balance(ctx context.Context) time.Duration {
	ttl, id := s.cfg.LockTTL, s.cfg.ID
	period := ttl / 2
	if s.lapsed() {
		s.log.Warn("scanner lease not renewed within its length; dropping every shard until it is", "lease", ttl)
		for _, sh := range s.snapshot() {
			s.drop(sh)
		}
	}
	began := time.Now()
	v, err := s.store.RenewLease(ctx, id, ttl)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("renew scanner lease", "err", err)
		}
		return min(period, time.Second)
	}
	s.setRenewed(began)
	s.mu.Lock()
	s.view = &v
	s.mu.Unlock()
	for _, sh := range s.snapshot() {
		if v.Owners[sh.n] != id {
			s.log.Warn("lost shard: another instance took it over while this one's lease had lapsed", "shard", sh.n, "holder", v.Owners[sh.n])
			s.drop(sh)
		}
	}
	total := s.store.Shards()
	live := max(len(v.Alive), 1)
	share := (total + live - 1) / live
	counts := map[string]int{}
	var free []int
	for i := range total {
		o := v.Owners[i]
		if _, alive := v.Alive[o]; alive && o != id {
			counts[o]++
		} else if !s.holds(i) {
			free = append(free, i)
		}
	}
	n := len(s.Held())
	least := n
	for o := range v.Alive {
		if o != id {
			least = min(least, counts[o])
		}
	}
	switch {
	case n > share:
		s.giveBack(n-share, n, live, share)
	case n >= 2 && n-least >= 2 && n >= total/live+1:
		s.giveBack(1, n, live, share) // one a round, so that instances converge without churn
	case n < share && len(free) > 0:
		rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		taken, err := s.store.TakeShards(ctx, id, ttl, share-n, free)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("take shards", "err", err)
			}
			break
		}
		s.setRenewed(began)
		for _, i := range taken {
			s.take(ctx, i)
		}
	}
	next := period
	for o, exp := range v.Alive {
		if o == id {
			continue
		}
		// a little after its expiry on the Redis clock, so as not to find it alive
		if d := time.Until(s.store.Local(exp)) + expiryMargin; d < next {
			next = max(d, expiryMargin)
		}
	}
	return next
}

// Settled reports whether this instance has nothing to do before by:
// every shard is either held by another live instance, or held here,
// scanned since it was taken, and, once its attempts' outcomes are applied,
// has no wheel slot to process before by. It also returns the earliest
// slot left in the shards held here (zero when none): nothing there is due
// before it. For `kairos tick`, which stops once settled. It reads the
// shards' last passes first and asks Redis (a claim of nothing a shard,
// which applies the outcomes appended since) only when they say settled,
// or when by is zero.
func (s *Scanner) Settled(ctx context.Context, by time.Time) (bool, time.Time, error) {
	s.mu.Lock()
	view := s.view
	held := make(map[int]*shard, len(s.held))
	for n, sh := range s.held {
		held[n] = sh
	}
	s.mu.Unlock()
	if view == nil {
		return false, time.Time{}, nil
	}
	settled := true
	for i := range s.store.Shards() {
		sh := held[i]
		if sh == nil {
			if _, alive := view.Alive[view.Owners[i]]; !alive || view.Owners[i] == s.cfg.ID {
				settled = false // free, or under an expired lease: to be taken
			}
			continue
		}
		sh.wakeMu.Lock()
		passes, next := sh.passes, sh.next
		sh.wakeMu.Unlock()
		if passes == 0 || (!by.IsZero() && !next.IsZero() && next.Before(by)) {
			settled = false
		}
	}
	if !settled && !by.IsZero() {
		return false, time.Time{}, nil
	}
	var next time.Time
	for _, sh := range held {
		c, err := s.store.ClaimDue(ctx, sh.n, 0, 0, s.cfg.LeaseTimeout())
		if err != nil {
			return false, time.Time{}, err
		}
		sh.wakeMu.Lock()
		sh.next = c.Next
		sh.wakeMu.Unlock()
		if c.Next.IsZero() {
			continue
		}
		if next.IsZero() || c.Next.Before(next) {
			next = c.Next
		}
		if !by.IsZero() && c.Next.Before(by) {
			settled = false
			sh.notify(c.Next.Add(-s.ahead(sh.n)))
		}
	}
	return settled, next, nil
}

// expiryMargin is how long after another instance's lease expires this one
// looks whether it was renewed.
const expiryMargin = 50 * time.Millisecond

// giveBack gives back k of the shards held, the highest numbered first.
func (s *Scanner) giveBack(k, n, live, share int) {
	held := s.snapshot()
	slices.SortFunc(held, func(a, b *shard) int { return b.n - a.n })
	var gave []int
	for _, sh := range held[:min(k, len(held))] {
		s.drop(sh)
		gave = append(gave, sh.n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.store.GiveShards(ctx, s.cfg.ID, gave, false); err != nil {
		s.log.Debug("give back shards; they are free when the lease expires", "err", err)
	}
	s.log.Info("released shards for a fair share", "shards", gave, "held", n, "live", live, "share", share)
}

func (s *Scanner) lapsed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held) > 0 && time.Since(s.renewed) >= s.cfg.LockTTL
}

func (s *Scanner) setRenewed(t time.Time) {
	s.mu.Lock()
	s.renewed = t
	s.mu.Unlock()
}

func (s *Scanner) holds(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.held[n]
	return ok
}

func (s *Scanner) snapshot() []*shard {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*shard, 0, len(s.held))
	for _, sh := range s.held {
		out = append(out, sh)
	}
	return out
}

func (s *Scanner) take(ctx context.Context, n int) {
	sctx, cancel := context.WithCancel(ctx)
	sh := &shard{n: n, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1)}
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

// drop stops scanning a shard (giving it back is the caller's).
func (s *Scanner) drop(sh *shard) {
	s.mu.Lock()
	delete(s.held, sh.n)
	count := len(s.held)
	s.mu.Unlock()
	s.log.Debug("dropped shard", "shard", sh.n, "held", count)
	sh.cancel()
	<-sh.done
}

// stop ends every shard loop, then gives the shards and the lease back in
// one call.
func (s *Scanner) stop() {
	held := s.snapshot()
	var wg sync.WaitGroup
	shards := make([]int, len(held))
	for i, sh := range held {
		shards[i] = sh.n
		wg.Go(func() { s.drop(sh) })
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.store.GiveShards(ctx, s.cfg.ID, shards, true); err != nil {
		s.log.Warn("give back shards; others take them when the lease expires", "err", err)
	}
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
		sh.wakeMu.Lock()
		sh.passes++
		sh.next = c.Next
		sh.wakeMu.Unlock()
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
