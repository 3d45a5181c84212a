package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/api"
	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/metrics"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/scanner"
	"github.com/kairos-sh/kairos/web"
)

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serve runs the roles asked for until ctx ends, then stops them in order:
// the scanner stops claiming, workers finish in-flight callbacks within the
// grace period, the HTTP server drains, locks are released, Redis closes.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)

	client, blocking, closeEmbedded, err := redisClients(cfg, log)
	if err != nil {
		return err
	}
	defer closeEmbedded()
	defer client.Close()
	defer blocking.Close()

	m := metrics.New()
	client.AddHook(m.Hook())
	blocking.AddHook(m.Hook())
	store := rdb.New(client, rdb.Options{Prefix: cfg.Prefix, Shards: cfg.Shards, Retention: cfg.Retention, LeaseGrace: cfg.LeaseGrace,
		Blocking: blocking, NewSecret: callback.NewSecret, OnEnqueued: m.Created, WaitReplicas: cfg.WaitReplicas})
	if err := initStore(ctx, store, log); err != nil {
		return err
	}

	secret := cfg.AuthSecret
	if secret == "" {
		b := make([]byte, 32)
		rand.Read(b)
		secret = base64.StdEncoding.EncodeToString(b)
	}
	authn := auth.New([]byte(secret), nil)

	var wg sync.WaitGroup
	var worker *callback.Worker
	workerCtx, stopWorker := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorker()
	var workerDone chan struct{}
	if cfg.Roles["worker"] {
		rec := store.NewRecorder()
		worker = callback.NewWorker(store, callback.WorkerConfig{AllowPrivate: cfg.AllowPrivate, Grace: cfg.Grace, Logger: log,
			OnAttempt: func(e callback.Event) {
				rec.Observe(e.Job.Tenant, e.Job.Topic, e.State, e.Attempt.N, e.Lateness)
				m.Attempt(e)
			}})
		workerDone = make(chan struct{})
		go func() {
			defer close(workerDone)
			recDone := make(chan struct{})
			rctx, stopRec := context.WithCancel(context.WithoutCancel(ctx))
			go func() { defer close(recDone); rec.Run(rctx) }()
			worker.Run(workerCtx)
			stopRec()
			<-recDone
		}()
	}
	var scannerDone chan struct{}
	gauges := metrics.Gauges{Store: store}
	if worker != nil {
		gauges.InFlight = worker.InFlight
	}
	if cfg.Roles["scanner"] {
		rs := redsync.New(goredis.NewPool(client))
		sc := scanner.New(store, rs, scanner.Config{LockTTL: cfg.LockTTL, Logger: log})
		gauges.LocksHeld = func() int { return len(sc.Held()) }
		scannerDone = make(chan struct{})
		go func() { defer close(scannerDone); sc.Run(ctx) }()
	}
	m.Watch(gauges)
	metricsHandler := protect(m.Handler(), cfg.MetricsToken)
	var h http.Handler
	if cfg.Roles["api"] {
		onTopic := func() {}
		if worker != nil {
			onTopic = worker.Refresh
		}
		page := web.Handler()
		h = api.New(store, authn, api.Config{MaxPayload: cfg.MaxPayload, Logger: log, OnTopicChange: onTopic,
			Page: page, Metrics: metricsHandler})
	} else {
		h = opsHandler(store, metricsHandler)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	})
	url := "http://" + displayAddr(ln.Addr())
	log.Info("kairos listening", "url", url, "roles", roleList(cfg))
	if cfg.Roles["api"] && cfg.AuthSecret == "" {
		tok, err := authn.Mint("admin", true, 0)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nkairos is running at %s (embedded Redis: nothing persists)\n\n"+
			"Admin token (valid until this process stops; its secret was generated at start):\n\n  %s\n\n"+
			"Open %s/ and paste the token, or try:\n  curl -H 'Authorization: Bearer %s' %s/v1/topics\n\n", url, tok, url, tok, url)
	}

	<-ctx.Done()
	log.Info("shutting down", "grace", cfg.Grace)
	if scannerDone != nil {
		<-scannerDone // stops claiming, releases its shard locks
	}
	if worker != nil {
		stopWorker()
		blocking.Close() // wakes consumers blocked in BRPOP
		<-workerDone     // in-flight callbacks finish within the grace period
	}
	{
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}
	wg.Wait()
	log.Info("kairos stopped")
	return nil
}

// redisClients connects to KAIROS_REDIS_URL (a Redis Cluster when
// KAIROS_REDIS_CLUSTER is set) or starts the embedded Redis. It returns the
// main client and the one for blocking pops: blocked consumers hold their
// connections, so they get a pool of their own and can never take the
// connections API calls need.
func redisClients(cfg Config, log *slog.Logger) (client, blocking redis.UniversalClient, closeEmbedded func(), err error) {
	const blockingPool = 4096 // an upper bound; connections open on demand
	if cfg.RedisCluster {
		opt, err := redis.ParseClusterURL(cfg.RedisURL)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("KAIROS_REDIS_URL: %w (want redis://[user:password@]host:port?addr=host2:port&addr=host3:port for a cluster)", err)
		}
		bopt := *opt
		bopt.PoolSize = blockingPool
		return redis.NewClusterClient(opt), redis.NewClusterClient(&bopt), func() {}, nil
	}
	var opt *redis.Options
	closeEmbedded = func() {}
	if cfg.RedisURL != "" {
		if opt, err = redis.ParseURL(cfg.RedisURL); err != nil {
			return nil, nil, nil, fmt.Errorf("KAIROS_REDIS_URL: %w (want redis://[user:password@]host:port[/db] or rediss://...)", err)
		}
	} else {
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true) // key TTLs follow the wall clock, as redsync's lock expiry needs
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			return nil, nil, nil, fmt.Errorf("start embedded redis: %w", err)
		}
		log.Warn("KAIROS_REDIS_URL is not set: using an EMBEDDED IN-MEMORY Redis for trying kairos out. " +
			"NOTHING PERSISTS: every job is lost when this process stops. Set KAIROS_REDIS_URL for real use.")
		opt, closeEmbedded = &redis.Options{Addr: m.Addr()}, m.Close
	}
	bopt := *opt
	bopt.PoolSize = blockingPool
	return redis.NewClient(opt), redis.NewClient(&bopt), closeEmbedded, nil
}

// initStore checks the shard count and clock, retrying while Redis comes up.
func initStore(ctx context.Context, store *rdb.Store, log *slog.Logger) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := store.Init(ctx)
		if err == nil || errors.Is(err, rdb.ErrShardMismatch) {
			return err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("cannot reach Redis: %w", err)
		}
		log.Warn("waiting for Redis", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func displayAddr(a net.Addr) string {
	host, port, _ := net.SplitHostPort(a.String())
	if host == "::" || host == "0.0.0.0" || host == "" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

func roleList(cfg Config) string {
	var out []string
	for _, r := range allRoles {
		if cfg.Roles[r] {
			out = append(out, r)
		}
	}
	return strings.Join(out, ",")
}
