// Package scanner moves due jobs from the timing wheel's shards onto the
// topics' ready lists, where workers pop them. Each shard is scanned under
// its redsync mutex, held only while the shard has work due soon: an idle
// process holds no mutex and costs Redis about nothing. A scanner learns
// when a shard has work from its own claims, from wake messages (a job
// created earlier than the shard's next work, a mutex given back), and by
// looking at every shard at least every MaxSleep. A shard whose mutex
// another process holds is tried again when that mutex would expire, so a
// dead process's shards are taken over within its expiry; scanners that
// hold more than their share of the shards (live scanners announce
// themselves) give the extra back.
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
	ID string // instance id, unique per process
	// LockTTL is a shard mutex's expiry: a dead process's shards are taken
	// over within it of its last extension. Default 10s.
	LockTTL time.Duration
	Batch   int // jobs moved per script call; default 500
	// MaxSleep is the longest a shard goes unlooked at; default and at most
	// rdb.WakeHorizon, since jobs due later than that wake no scanner.
	MaxSleep time.Duration
	// Ahead is how long before their due time jobs are claimed; the
	// workers hold them until then. Default 20ms.
	Ahead time.Duration
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
	// SkippedFunc, if set, is told of the schedule instants that a claim's
	// overlap rule did not fire, by topic (kairos_occurrences_skipped_total).
	SkippedFunc func(tenant, topic string, n int)
}

// Scanner claims due jobs of the shards whose mutex it holds.
type Scanner struct {
	store  *rdb.Store
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer
	shards []*shard

	mu       sync.Mutex
	peers    map[string]peer // other live scanners
	gaveBack time.Time       // when a shard was last given back for balance
}

// peer is another scanner as its last announcement said.
type peer struct {
	at   time.Time // when heard
	held int       // shards it held then
}

// shard is one shard's state in this scanner.
type shard struct {
	n    int
	wake chan struct{} // signals that wakeAt holds a wake-up

	mu     sync.Mutex
	wakeAt time.Time // the earliest work heard of and not yet looked at (Redis clock)
	held   bool      // its mutex is held here
	passes int       // claim passes finished
	next   time.Time // its earliest work after the last pass (Redis clock); zero when none
	active int       // attempts under lease after the last pass
	// rest is when this scanner may take the shard again after giving it
	// back for balance, so that another takes it
	rest time.Time
}

// notify records work at at (Redis clock); notifications coalesce to the
// earliest.
func (sh *shard) notify(at time.Time) {
	sh.mu.Lock()
	if sh.wakeAt.IsZero() || at.Before(sh.wakeAt) {
		sh.wakeAt = at
	}
	sh.mu.Unlock()
	select {
	case sh.wake <- struct{}{}:
	default:
	}
}

func (sh *shard) takeWake() time.Time {
	sh.mu.Lock()
	defer sh.mu.Unlock()
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
	s := &Scanner{store: store, cfg: cfg, log: cfg.Logger.With("component", "scanner", "instance", cfg.ID),
		tracer: cfg.Tracer.Tracer(tracing.Scope), peers: map[string]peer{}}
	for n := range store.Shards() {
		s.shards = append(s.shards, &shard{n: n, wake: make(chan struct{}, 1)})
	}
	return s
}

// Held returns the shards whose mutex this scanner holds now.
func (s *Scanner) Held() []int {
	var out []int
	for _, sh := range s.shards {
		sh.mu.Lock()
		if sh.held {
			out = append(out, sh.n)
		}
		sh.mu.Unlock()
	}
	return out
}

// clockSync is how often the offset from Redis's clock is measured again.
const clockSync = 5 * time.Minute

// Run scans until ctx ends, then gives back the mutexes it holds. It
// returns nil on a clean stop.
func (s *Scanner) Run(ctx context.Context) error {
	wakes := s.cfg.Wakes
	if wakes == nil {
		wakes = s.store.SubscribeWake(ctx)
	}
	var wg sync.WaitGroup
	for _, sh := range s.shards {
		wg.Go(func() { s.scan(ctx, sh) })
	}
	alive := time.NewTicker(s.cfg.LockTTL / 2)
	defer alive.Stop()
	s.announce(ctx)
	s.log.Info("scanner started", "shards", len(s.shards), "lock_ttl", s.cfg.LockTTL)
	lastSync := time.Now()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			if err := s.store.Gone(gctx, s.cfg.ID); err != nil {
				s.log.Debug("say the scanner stopped; the others count it out after its announcements stop", "err", err)
			}
			cancel()
			s.log.Info("scanner stopped")
			return nil
		case w, ok := <-wakes:
			if !ok {
				wakes = nil
				continue
			}
			s.Wake(w)
		case <-alive.C:
			s.announce(ctx)
			if s.prune() { // a scanner gone: its shards are free once their mutexes expire
				now := s.store.Now()
				for _, sh := range s.shards {
					sh.notify(now)
				}
			}
			if time.Since(lastSync) > clockSync {
				if err := s.store.SyncClock(ctx); err == nil {
					lastSync = time.Now()
				}
			}
		}
	}
}

// announce tells the other scanners that this one is alive.
func (s *Scanner) announce(ctx context.Context) {
	if err := s.store.Alive(ctx, s.cfg.ID, s.holding()); err != nil && ctx.Err() == nil {
		s.log.Debug("announce the scanner", "err", err)
	}
}

// Wake acts on a wake message: a shard with work at a time looks then
// (ahead of it); a scanner alive is counted; after a (re)subscription,
// when messages may have been lost, every shard looks now.
func (s *Scanner) Wake(w rdb.Wake) {
	switch {
	case w.Topics:
	case w.Scanner != "" && w.ScannerGone:
		s.mu.Lock()
		_, known := s.peers[w.Scanner]
		delete(s.peers, w.Scanner)
		s.mu.Unlock()
		if known { // its shards are free once given back: look at them now
			now := s.store.Now()
			for _, sh := range s.shards {
				sh.notify(now)
			}
		}
	case w.Scanner != "":
		if w.Scanner != s.cfg.ID {
			s.mu.Lock()
			s.peers[w.Scanner] = peer{at: time.Now(), held: w.ScannerHeld}
			s.mu.Unlock()
		}
	case w.Resubscribed:
		now := s.store.Now()
		for _, sh := range s.shards {
			sh.notify(now)
		}
	default:
		if w.Shard >= 0 && w.Shard < len(s.shards) {
			s.shards[w.Shard].notify(w.At.Add(-s.ahead(w.Shard)))
		}
	}
}

// share is how many shards this scanner should hold at most: the shards
// over the live scanners, rounded up.
func (s *Scanner) share() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := 1 + len(s.peers)
	return (len(s.shards) + live - 1) / live
}

// prune forgets the scanners not heard of for peerExpiry; it reports
// whether it forgot one.
func (s *Scanner) prune() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := false
	for id, p := range s.peers {
		if time.Since(p.at) > s.peerExpiry() {
			delete(s.peers, id)
			gone = true
		}
	}
	return gone
}

// peerExpiry is how long a scanner not heard of is counted as alive: it
// announces itself every half mutex expiry, so it is counted out when its
// mutexes have expired, and its shards are taken over then.
func (s *Scanner) peerExpiry() time.Duration { return s.cfg.LockTTL }

// holding is how many shards this scanner holds.
func (s *Scanner) holding() int { return len(s.Held()) }

// overLoaded reports whether this scanner should give a shard back for
// balance: it holds two or more shards more than the least loaded live
// scanner, or more than its share. One shard goes back at a time, at most
// every half expiry, so that the scanners converge without churn.
func (s *Scanner) overLoaded() bool {
	held := s.holding()
	if held > s.share() {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if held < 2 || len(s.peers) == 0 || time.Since(s.gaveBack) < s.cfg.LockTTL/2 {
		return false
	}
	least := held
	for _, p := range s.peers {
		least = min(least, p.held)
	}
	if held-least < 2 {
		return false
	}
	s.gaveBack = time.Now()
	return true
}

// scan is one shard's loop. Idle, it waits for the shard's work; then it
// takes the shard's mutex, claims until no work is due within the hold
// window, extending the mutex as it goes, and gives the mutex back,
// telling the other scanners when the shard's next work is. A mutex held
// elsewhere is tried again as it would expire.
func (s *Scanner) scan(ctx context.Context, sh *shard) {
	timer := time.NewTimer(0) // look at once
	defer timer.Stop()
	planned := s.store.Now() // Redis clock: a wake-up only brings it forward
	for {
		select {
		case <-ctx.Done():
			return
		case <-sh.wake:
			if at := sh.takeWake(); !at.IsZero() && at.Before(planned) {
				planned = at
				timer.Reset(max(time.Until(s.store.Local(at)), 0))
			}
			continue
		case <-timer.C:
		}
		wait := s.turn(ctx, sh)
		planned = s.store.Now().Add(wait)
		timer.Reset(wait)
	}
}

// turn is one go at shard sh: it returns how long to wait before the next.
func (s *Scanner) turn(ctx context.Context, sh *shard) time.Duration {
	sh.mu.Lock()
	rest := time.Until(sh.rest)
	sh.mu.Unlock()
	if rest > 0 {
		return rest
	}
	if s.prune() { // a scanner gone: every shard looks again
		now := s.store.Now()
		for _, o := range s.shards {
			o.notify(now)
		}
	}
	if s.holding() >= s.share() {
		// its share is held: the shard is another's, or waits for one whose
		// share has room; tried again in case no live scanner takes it
		return s.cfg.LockTTL / 2
	}
	m := s.store.ShardMutex(sh.n, s.cfg.LockTTL, s.cfg.ID)
	if err := m.TryLockContext(ctx); err != nil {
		if ctx.Err() != nil {
			return 0
		}
		var taken *redsync.ErrTaken
		if !errors.As(err, &taken) && !errors.Is(err, redsync.ErrFailed) {
			s.log.Warn("take a shard's mutex", "shard", sh.n, "err", err)
			return retryRedis
		}
		// held elsewhere: try again as it would expire, should its holder die
		left, err := s.store.LockLeft(ctx, sh.n)
		if err != nil {
			return retryRedis
		}
		return left + expiryMargin
	}
	s.setHeld(sh, true)
	s.log.Debug("took shard", "shard", sh.n)
	wait := s.work(ctx, sh, m)
	s.setHeld(sh, false)
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if _, err := m.UnlockContext(uctx); err != nil {
		s.log.Debug("give back a shard's mutex; it expires", "shard", sh.n, "err", err)
	}
	sh.mu.Lock()
	next := sh.next
	sh.mu.Unlock()
	if !next.IsZero() && next.Sub(s.store.Now()) < rdb.WakeHorizon {
		// the others learn when to look, should this process be gone then
		if err := s.store.Wake(uctx, sh.n, next); err != nil {
			s.log.Debug("tell when a shard's next work is", "shard", sh.n, "err", err)
		}
	}
	return wait
}

// work claims shard sh's due jobs while it holds mutex m: pass after pass,
// sleeping until the next work while that is within the hold window (the
// mutex's half life), extending the mutex before it would expire. It
// returns, to give the mutex back, when the next work is further away,
// when this scanner holds more than its share, or when extending failed;
// the returned wait is until that next work.
func (s *Scanner) work(ctx context.Context, sh *shard, m *redsync.Mutex) time.Duration {
	extended := time.Now()
	window := s.cfg.LockTTL / 2
	timer := time.NewTimer(0)
	defer timer.Stop()
	planned := time.Now() // when the timer fires (local clock): a wake-up only brings it forward
	for {
		// a wake-up heard while a pass runs waits in sh.wake: it is taken
		// here, or by scan once the shard is given back
		select {
		case <-ctx.Done():
			return 0
		case <-sh.wake:
			if at := sh.takeWake(); !at.IsZero() {
				if local := s.store.Local(at); local.Before(planned) {
					planned = local
					timer.Reset(max(time.Until(local), 0))
				}
			}
			continue
		case <-timer.C:
		}
		if time.Since(extended) > window/2 {
			ok, err := m.ExtendContext(ctx)
			if err != nil || !ok {
				if ctx.Err() == nil {
					s.log.Warn("extend a shard's mutex; giving the shard up", "shard", sh.n, "err", err)
				}
				return 0
			}
			extended = time.Now()
		}
		p, err := s.pass(ctx, sh.n)
		if err != nil {
			if ctx.Err() != nil {
				return 0
			}
			s.log.Warn("claim", "shard", sh.n, "err", err)
			planned = time.Now().Add(retryRedis)
			timer.Reset(retryRedis)
			continue
		}
		sh.mu.Lock()
		sh.passes++
		sh.next, sh.active = p.Next, p.Active
		sh.mu.Unlock()
		if p.Refills > 0 {
			if err := s.store.RefillSchedules(context.WithoutCancel(ctx), sh.n, refillBatch); err != nil {
				s.log.Warn("refill schedules", "shard", sh.n, "err", err)
			}
		}
		// sleep until the next work is due to be claimed, measured on the
		// Redis clock the claim itself used
		wait := s.cfg.MaxSleep
		if !p.Next.IsZero() {
			wait = min(wait, max(p.Next.Sub(p.Now)-s.ahead(sh.n), 0))
		}
		if wait > window || s.overLoaded() {
			if wait <= window { // given back for balance: another takes it
				sh.mu.Lock()
				sh.rest = time.Now().Add(s.cfg.LockTTL)
				sh.mu.Unlock()
			}
			return wait
		}
		planned = time.Now().Add(wait)
		timer.Reset(wait)
	}
}

func (s *Scanner) setHeld(sh *shard, held bool) {
	sh.mu.Lock()
	sh.held = held
	sh.mu.Unlock()
}

// pass claims due jobs in batches until fewer than a batch are due.
// Claims run on a context that shutdown does not cancel mid-call. A pass's
// first claim takes at most firstBatch jobs: when many shards come due at
// the same instant, their first jobs reach the workers after a few short
// scripts rather than after every shard's full batch.
func (s *Scanner) pass(ctx context.Context, n int) (rdb.Pass, error) {
	limit := min(s.cfg.Batch, firstBatch)
	for {
		began := time.Now()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		p, err := s.store.Claim(cctx, n, limit, s.ahead(n), s.cfg.LeaseTimeout())
		cancel()
		if err != nil {
			return rdb.Pass{}, err
		}
		s.reportSkipped(p)
		if p.Claimed > 0 {
			s.traceClaim(ctx, n, began, p.Claimed)
			s.log.Debug("claimed", "shard", n, "jobs", p.Claimed)
		}
		if p.Claimed < limit || ctx.Err() != nil {
			return p, nil
		}
		limit = s.cfg.Batch
	}
}

// reportSkipped tells SkippedFunc of the instants a claim skipped.
func (s *Scanner) reportSkipped(p rdb.Pass) {
	if s.cfg.SkippedFunc == nil {
		return
	}
	for _, c := range p.Skipped {
		s.cfg.SkippedFunc(c.Tenant, c.Topic, c.N)
	}
}

// Settled reports whether shards have nothing for a tick to do before by
// (Redis clock): no attempt under lease (a job claimed and not finished,
// here or in another process) and no work due before by. It also returns
// the earliest work left (zero when none). For `kairos tick`, which stops
// once settled. It asks Redis (a claim of nothing a shard).
func (s *Scanner) Settled(ctx context.Context, by time.Time) (bool, time.Time, error) {
	settled := true
	var next time.Time
	for _, sh := range s.shards {
		p, err := s.store.Claim(ctx, sh.n, 0, 0, s.cfg.LeaseTimeout())
		if err != nil {
			return false, time.Time{}, err
		}
		s.reportSkipped(p)
		if p.Active > 0 {
			settled = false
		}
		if p.Next.IsZero() {
			continue
		}
		if next.IsZero() || p.Next.Before(next) {
			next = p.Next
		}
		if !by.IsZero() && p.Next.Before(by) {
			settled = false
			sh.notify(p.Next.Add(-s.ahead(sh.n)))
		}
	}
	return settled, next, nil
}

// retryRedis is how soon a shard's loop tries again after Redis failed
// it: soon, so that the jobs due while Redis was away go out soon after it
// is back.
const retryRedis = 250 * time.Millisecond

// expiryMargin is how long after another scanner's mutex would expire this
// one tries it again.
const expiryMargin = 50 * time.Millisecond

// ahead is how long before their due time shard n's jobs are claimed:
// Ahead, plus a phase that spreads the shards' claims evenly over the
// wheel's narrowest slot. Slots start at the same instants in every shard,
// so without it every shard's claim would come at one moment, a burst of
// Redis and process work that delays the jobs firing then.
func (s *Scanner) ahead(n int) time.Duration {
	shards := time.Duration(len(s.shards))
	return s.cfg.Ahead + rdb.SlotWidth*(time.Duration(n)%shards)/shards
}

// refillBatch is how many schedules a shard's loop refills after a claim.
const refillBatch = 100

const firstBatch = 50

func randomID() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 10)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}

// traceClaim records a claim that took jobs as a consumer span; claims
// that take none leave no span.
func (s *Scanner) traceClaim(ctx context.Context, n int, began time.Time, jobs int) {
	_, span := s.tracer.Start(ctx, "claim", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(began),
		trace.WithNewRoot())
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(semconv.MessagingSystemKey.String(tracing.System), semconv.MessagingOperationTypeReceive,
		semconv.MessagingOperationName("claim"), semconv.MessagingBatchMessageCount(jobs), attribute.Int("kairos.shard", n))
	span.End()
}
