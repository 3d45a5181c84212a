package server

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/scanner"
)

// Tick connects to Redis and runs one tick (runTick) for at most d: what
// `kairos tick --for d` does.
func Tick(ctx context.Context, cfg Config, log *slog.Logger, d time.Duration) (kairos.TickSummary, error) {
	client, blocking, closeAll, err := connect(cfg, log)
	if err != nil {
		return kairos.TickSummary{}, err
	}
	defer closeAll()
	store := rdb.New(client, rdb.Options{Prefix: cfg.Prefix, Shards: cfg.Shards, Retention: cfg.Retention, LeaseGrace: cfg.LeaseGrace,
		ReadyLease: cfg.ReadyLease, Blocking: blocking, NewSecret: callback.NewSecret, WaitReplicas: cfg.WaitReplicas})
	if err := initStore(ctx, cfg, store, log); err != nil {
		return kairos.TickSummary{}, err
	}
	return runTick(ctx, store, cfg, log, nil, d, nil, nil, nil)
}

// tickDrain is the part of a tick, at its end, in which it claims nothing
// more so that callbacks started can finish: a tenth of the tick, at most
// tickDrainMax.
const tickDrainMax = 5 * time.Second

// tickCheck is how often a tick looks whether it is done.
const tickCheck = 100 * time.Millisecond

// runTick runs a scanner and workers of their own on store, as a process
// of those roles would, for at most d, and returns what they did. The
// scanner takes the shards whose mutex no live process holds (so ticks may
// run at once, beside serving processes too) and claims until a tenth of d
// (at most 5s) is left; the tick ends sooner, as soon as no attempt is
// under lease (none claimed and not finished, here or elsewhere) and
// nothing is due before then. It then gives its mutexes back and releases
// the jobs it popped but did not start. A callback still running when d
// is up is left running: in a process that ends (kairos tick) its job is
// handed out again when its lease lapses; done, it is counted in InFlight.
// Its own subscription to wake messages feeds the scanner; tp traces like
// the serving roles (nil: no traces).
func runTick(ctx context.Context, store *rdb.Store, cfg Config, log *slog.Logger, tp trace.TracerProvider, d time.Duration,
	onAttempt func(callback.Event), onSkipped func(tenant, topic string, n int), onBreaker func(tenant, topic string, b kairos.Breaker)) (kairos.TickSummary, error) {
	began := time.Now()
	deadline := began.Add(d)
	claimUntil := deadline.Add(-min(d/10, tickDrainMax))
	log = log.With("tick", true)

	var delivered, failed, dead atomic.Int64
	worker := callback.NewWorker(store, callback.WorkerConfig{AllowPrivate: cfg.AllowPrivate, Proxy: cfg.CallbackProxy, RootCAs: cfg.CallbackRoots,
		Grace: cfg.Grace, Logger: log, Tracer: tp, TopicPoll: topicPoll, Hold: min(10*time.Second, cfg.ReadyLease/2),
		OnAttempt: func(e callback.Event) {
			switch e.State {
			case kairos.StateDelivered:
				delivered.Add(1)
			case kairos.StateDead:
				dead.Add(1)
				failed.Add(1)
			case kairos.StateRetrying:
				failed.Add(1)
			}
			if onAttempt != nil {
				onAttempt(e)
			}
		},
		OnBreaker: onBreaker})

	run, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	scanCtx, stopScanner := context.WithCancel(run)
	workCtx, stopWorker := context.WithCancel(run)
	wakes := make(chan rdb.Wake, 64)
	var subWG, scanWG sync.WaitGroup
	subWG.Go(func() { routeWakes(scanCtx, store.SubscribeWake(run), wakes, worker.Refresh, worker.FlowFreed) })
	sc := scanner.New(store, scanner.Config{LockTTL: cfg.LockTTL, Logger: log, LeaseTimeout: worker.LongestTimeout, Tracer: tp, Wakes: wakes,
		SkippedFunc: onSkipped})
	scanWG.Go(func() { sc.Run(scanCtx) })
	workDone := make(chan struct{})
	go func() {
		defer close(workDone)
		worker.Run(workCtx)
	}()

	var next time.Time
	shards := 0
	check := time.NewTicker(tickCheck)
	defer check.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
			continue
		case <-check.C:
		}
		shards = max(shards, len(sc.Held()))
		if !time.Now().Before(claimUntil) {
			break
		}
		settled, n, err := sc.Settled(ctx, store.Now().Add(time.Until(claimUntil)))
		if err != nil {
			log.Warn("tick: look at the shards", "err", err)
			continue
		}
		shards = store.Shards() // every shard looked at
		next = n
		done = settled
	}
	if _, n, err := sc.Settled(context.WithoutCancel(ctx), time.Time{}); err == nil {
		next = n
	}
	stopScanner()
	scanWG.Wait() // claims nothing more; mutexes given back
	stopWorker()  // pops nothing more; callbacks started go on; held jobs go back
	select {
	case <-workDone:
	case <-time.After(time.Until(deadline)):
	}
	sum := kairos.TickSummary{Delivered: int(delivered.Load()), Failed: int(failed.Load()), Dead: int(dead.Load()),
		InFlight: int(worker.InFlight()), Shards: shards, Seconds: time.Since(began).Seconds()}
	if !next.IsZero() {
		n := next.UTC()
		sum.NextDue = &n
	}
	finish := func() {
		<-workDone
		stopRun()
		subWG.Wait()
	}
	if sum.InFlight == 0 {
		finish()
	} else {
		go finish() // the callbacks still running finish in the background, if this process lives on
	}
	return sum, nil
}
