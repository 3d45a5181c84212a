package server

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/api"
	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/bulk"
	"github.com/kairos-sh/kairos/internal/metrics"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/tracing"
	"github.com/kairos-sh/kairos/scanner"
	"github.com/kairos-sh/kairos/web"
)

// Instance is kairos running in this process: the roles its config asks
// for, wired to one store and one HTTP listener. `kairos serve` starts one.
type Instance struct {
	Client redis.UniversalClient // the main Redis client
	Authn  *auth.Authenticator   // verifies the API's tokens; mints them too
	URL    string                // where the HTTP listener answers
	// MetricsURL is the URL of /metrics on its own listener (Config.MetricsAddr), or "".
	MetricsURL string
	// DevSecretsFile is the file that keeps the embedded dev mode's
	// secrets across restarts (Config.DevSecretsFile), or "" when they
	// were made for this process alone.
	DevSecretsFile string
	Shards         int // the Delay Bucket shards, as recorded in Redis
	stop           func()
}

// Stop stops everything in order: the scanner stops claiming and releases
// its locks, in-flight callbacks finish within the grace period, the HTTP
// server drains, Redis closes last. Call it once.
func (in *Instance) Stop() { in.stop() }

// Start connects to Redis (with the metrics' hook on both clients), checks the store
// and starts the roles of cfg and the HTTP listener.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Instance, error) {
	client, blocking, closeEmbedded, err := redisClients(cfg, log)
	if err != nil {
		return nil, err
	}
	closeRedis := func() { blocking.Close(); client.Close(); closeEmbedded() }
	m := metrics.New()
	client.AddHook(m.Hook())
	blocking.AddHook(m.Hook())
	tp, stopTracing := trace.TracerProvider(noop.NewTracerProvider()), func(context.Context) error { return nil }
	if cfg.Tracing {
		// The OTLP exporter reads the OTEL_* variables of the process.
		if tp, stopTracing, err = tracing.Setup(ctx, os.Getenv, buildVersion()); err != nil {
			closeRedis()
			return nil, err
		}
		log.Info("tracing to OTLP", "endpoint", cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "default"))
	}
	closeRedis = func() {
		blocking.Close()
		client.Close()
		closeEmbedded()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(ctx); err != nil {
			log.Warn("flush traces", "err", err)
		}
	}
	store := rdb.New(client, rdb.Options{Prefix: cfg.Prefix, Shards: cfg.Shards, Retention: cfg.Retention, LeaseGrace: cfg.LeaseGrace, ReadyLease: cfg.ReadyLease,
		Blocking: blocking, NewSecret: callback.NewSecret, OnEnqueued: m.Created, WaitReplicas: cfg.WaitReplicas})
	if err := initStore(ctx, cfg, store, log); err != nil {
		closeRedis()
		return nil, err
	}
	if err := checkEviction(ctx, cfg, store, log); err != nil {
		closeRedis()
		return nil, err
	}
	if cfg.Roles["api"] {
		// before /readyz answers: the first creates then cost what a warm
		// process's do (README, Cold start)
		if err := store.Warm(ctx); err != nil {
			log.Warn("read topics ahead; the first requests read them", "err", err)
		}
	}
	secret := cfg.AuthSecret
	devFile, saveDev := "", func(context.Context) error { return nil }
	if cfg.RedisURL == "" && cfg.DevSecretsFile != "" {
		dev, err := loadDevSecrets(cfg.DevSecretsFile)
		if err == nil {
			saveDev, err = keepDevSigningKeys(ctx, store, cfg.DevSecretsFile, dev)
		}
		if err != nil {
			log.Warn("dev secrets not kept: new ones for this process only", "err", err)
		} else {
			devFile = cfg.DevSecretsFile
			if secret == "" {
				secret = dev.AuthSecret
			}
		}
	}
	if secret == "" {
		secret = newAuthSecret()
	}
	authn := auth.New([]byte(secret), nil)

	// Every part runs on a context of its own, so that stop can end them in order.
	run, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	scanCtx, stopScanner := context.WithCancel(run)
	workCtx, stopWorker := context.WithCancel(run)
	bulkCtx, stopBulk := context.WithCancel(run)
	var scanWG, workWG, srvWG, subWG, bulkWG sync.WaitGroup
	var runner *bulk.Runner
	gauges := metrics.Gauges{Store: store, Pools: map[string]func() *redis.PoolStats{"main": client.PoolStats, "blocking": blocking.PoolStats}}
	var worker *callback.Worker
	refresh := func() {}
	if cfg.Roles["worker"] {
		rec := store.NewRecorder()
		// Topic changes anywhere reach the workers as wake messages (a
		// topic's first job too: its ready lists then get a name); the poll
		// is a backstop, so that an idle process costs Redis little.
		worker = callback.NewWorker(store, callback.WorkerConfig{AllowPrivate: cfg.AllowPrivate, Proxy: cfg.CallbackProxy, RootCAs: cfg.CallbackRoots,
			Grace: cfg.Grace, Logger: log, Tracer: tp, TopicPoll: topicPoll, Hold: min(10*time.Second, cfg.ReadyLease/2),
			OnAttempt: func(e callback.Event) {
				rec.Observe(e.Job.Tenant, e.Job.Topic, e.State, e.Attempt.N, e.Lateness)
				m.Attempt(e)
			},
			OnBreaker: m.Breaker})
		gauges.InFlight = worker.InFlight
		refresh = worker.Refresh
		workWG.Go(func() {
			recCtx, stopRec := context.WithCancel(run)
			var recWG sync.WaitGroup
			recWG.Go(func() { rec.Run(recCtx) })
			worker.Run(workCtx)
			stopRec() // a last flush of the figures
			recWG.Wait()
		})
	}
	var scanWakes chan rdb.Wake
	if cfg.Roles["scanner"] {
		scanWakes = make(chan rdb.Wake, 64)
	}
	if cfg.Roles["scanner"] || cfg.Roles["worker"] {
		// one subscription for the process's parts
		wakes := store.SubscribeWake(run)
		var freed func(string)
		if worker != nil {
			freed = worker.FlowFreed
		}
		subWG.Go(func() { routeWakes(scanCtx, wakes, scanWakes, refresh, freed) })
	}
	if cfg.Roles["scanner"] {
		lease := leaseTimeouts(store, log)
		if worker != nil {
			lease = worker.LongestTimeout // the workers read the topics anyway: no read of its own
		}
		sc := scanner.New(store, scanner.Config{LockTTL: cfg.LockTTL, Logger: log, LeaseTimeout: lease, Tracer: tp, Wakes: scanWakes,
			SkippedFunc: m.Skipped})
		gauges.LocksHeld = func() int { return len(sc.Held()) }
		scanWG.Go(func() { sc.Run(scanCtx) })
	}
	m.Watch(gauges)
	metricsHandler, ownMetrics := metricsRoutes(cfg, m.Handler())
	var h http.Handler
	if cfg.Roles["api"] {
		onTopic := func() {}
		if worker != nil {
			onTopic = worker.Refresh
		}
		tick := func(ctx context.Context, d time.Duration) (kairos.TickSummary, error) {
			return runTick(ctx, store, cfg, log, tp, d, m.Attempt, m.Skipped, m.Breaker)
		}
		// Bulk operations run where they are created; one whose process died
		// is taken over by a process that looks for such: every few seconds
		// where a scanner or worker keeps the process busy with Redis anyway,
		// else at start and when a client reads it (an idle API process
		// sends Redis nothing).
		var poll time.Duration
		if cfg.Roles["scanner"] || cfg.Roles["worker"] {
			poll = bulkPoll
		}
		runner = bulk.New(store, bulk.Config{Logger: log, Poll: poll, Quota: cfg.Quota})
		bulkWG.Go(func() { runner.Run(bulkCtx) })
		h = api.New(store, authn, api.Config{MaxPayload: cfg.MaxPayload, AllowPrivate: cfg.AllowPrivate, Logger: log, OnTopicChange: onTopic,
			Page: web.Handler(), Metrics: metricsHandler, Tracer: tp, Tick: tick, RedisTimeout: cfg.RedisTimeout, Quota: cfg.Quota,
			ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout, MaxTokenTTL: cfg.MaxTokenTTL, MaxBodyInflight: cfg.MaxBodyInflight, Bulk: runner})
	} else {
		h = opsHandler(store, metricsHandler, cfg.RedisTimeout)
	}

	stop := func() {
		stopScanner()
		scanWG.Wait() // stops claiming, gives its shard mutexes back
		stopWorker()
		workWG.Wait() // stops popping; in-flight callbacks finish within the grace period; held jobs go back
		stopBulk()    // an operation left running is taken over by another process once its lease lapses
		bulkWG.Wait()
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		stop()
		stopRun()
		subWG.Wait()
		closeRedis()
		return nil, listenError(cfg.Addr, "--addr or KAIROS_ADDR", err)
	}
	metricsURL, stopMetrics, err := serveMetrics(cfg, ownMetrics, run, log)
	if err != nil {
		ln.Close()
		stop()
		stopRun()
		subWG.Wait()
		closeRedis()
		return nil, err
	}
	srv := newHTTPServer(cfg, h, run)
	srvWG.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	})
	return &Instance{Client: client, Authn: authn, URL: "http://" + displayAddr(ln.Addr()), MetricsURL: metricsURL, Shards: store.Shards(), DevSecretsFile: devFile,
		stop: func() {
			stop()
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
			srvWG.Wait()
			stopMetrics()
			stopRun()
			subWG.Wait() // the subscription ends with run
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := saveDev(dctx); err != nil {
				log.Warn("keep rotated dev signing secrets", "file", devFile, "err", err)
			}
			closeRedis() // last
		}}, nil
}

// bulkPoll is how often a process that runs a scanner or workers looks
// for bulk operations whose process died.
const bulkPoll = 10 * time.Second

// topicPoll is how often workers read the topic list when no wake message
// told them of a change.
const topicPoll = time.Minute

// routeWakes hands wake messages to the scanner (on scan, until scanning
// stops) and topic changes to the workers (refresh), until wakes closes.
// After a (re)subscription both look again: messages may have been lost.
// A flow's permit kept for a waiting job goes to the workers (freed, when
// set).
func routeWakes(scanning context.Context, wakes <-chan rdb.Wake, scan chan<- rdb.Wake, refresh func(), freed func(string)) {
	for w := range wakes {
		if w.Flow != "" {
			if freed != nil {
				freed(w.Flow)
			}
			continue
		}
		if w.Topics || w.Resubscribed {
			refresh()
		}
		if scan == nil || w.Topics {
			continue
		}
		select {
		case scan <- w:
		case <-scanning.Done():
			scan = nil
		}
	}
}

// leaseTimeouts returns the callback timeout that claimed jobs' leases
// cover when a job sets none: the longest of the topics' (their default
// included), read again at most every few seconds. A process that runs
// workers takes it from them instead (callback.Worker.LongestTimeout).
func leaseTimeouts(store *rdb.Store, log *slog.Logger) func() time.Duration {
	var mu sync.Mutex
	var at time.Time
	longest := kairos.DefaultTimeout
	return func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) < 5*time.Second {
			return longest
		}
		at = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		topics, err := store.ListTopics(ctx, "")
		if err != nil {
			log.Debug("read topic timeouts", "err", err)
			return longest
		}
		var l time.Duration
		for _, t := range topics {
			l = max(l, t.WithDefaults().Timeout)
		}
		if l > 0 {
			longest = l
		}
		return longest
	}
}

func displayAddr(a net.Addr) string {
	host, port, _ := net.SplitHostPort(a.String())
	if host == "::" || host == "0.0.0.0" || host == "" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// buildVersion is the module version kairos was built as, "(devel)" from a
// checkout.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return "unknown"
}
