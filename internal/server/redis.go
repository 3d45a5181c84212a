package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/rdb"
)

// redisClients connects to KAIROS_REDIS_URL (a Redis Cluster when
// KAIROS_REDIS_CLUSTER is set, the master that its Sentinels name when
// KAIROS_REDIS_SENTINEL_MASTER is) or starts the embedded Redis. It returns the
// main client and the one for blocking pops (see redisPool). A rediss://
// URL verifies the server against KAIROS_REDIS_CA when it is set.
func redisClients(cfg Config, log *slog.Logger) (client, blocking redis.UniversalClient, closeEmbedded func(), err error) {
	roots, err := redisCA(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	if cfg.RedisCluster {
		opt, err := redis.ParseClusterURL(cfg.RedisURL)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("KAIROS_REDIS_URL: %w (want redis://[user:password@]host:port?addr=host2:port&addr=host3:port for a cluster)", urlErr(err))
		}
		trustCA(opt.TLSConfig, roots)
		opt.ContextTimeoutEnabled = true
		bopt := *opt
		mainPool.set(&opt.ClientName, &opt.PoolSize, &opt.MaxIdleConns)
		blockingPool.set(&bopt.ClientName, &bopt.PoolSize, &bopt.MaxIdleConns)
		return redis.NewClusterClient(opt), redis.NewClusterClient(&bopt), func() {}, nil
	}
	if cfg.RedisSentinelMaster != "" {
		opt, err := sentinelOptions(cfg.RedisURL, cfg.RedisSentinelMaster)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("KAIROS_REDIS_URL: %w", err)
		}
		trustCA(opt.TLSConfig, roots)
		opt.ContextTimeoutEnabled = true
		bopt := *opt
		mainPool.set(&opt.ClientName, &opt.PoolSize, &opt.MaxIdleConns)
		blockingPool.set(&bopt.ClientName, &bopt.PoolSize, &bopt.MaxIdleConns)
		// Each asks the Sentinels where the master is when it dials, and
		// drops its connections to the old one when they announce a new;
		// masterConns closes the rest, its pub/sub ones.
		client, blocking := redis.NewFailoverClient(opt), redis.NewFailoverClient(&bopt)
		mc := newMasterConns(log)
		client.AddHook(mc)
		blocking.AddHook(mc)
		return client, blocking, func() {}, nil
	}
	var opt *redis.Options
	closeEmbedded = func() {}
	if cfg.RedisURL != "" {
		if opt, err = redis.ParseURL(cfg.RedisURL); err != nil {
			return nil, nil, nil, fmt.Errorf("KAIROS_REDIS_URL: %w (want redis://[user:password@]host:port[/db] or rediss://...)", urlErr(err))
		}
		trustCA(opt.TLSConfig, roots)
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
	// Calls end at their context's deadline, not only at the read timeout:
	// an API request bounded by KAIROS_REDIS_TIMEOUT answers 503 in time
	// when Redis is frozen or partitioned away.
	opt.ContextTimeoutEnabled = true
	bopt := *opt
	mainPool.set(&opt.ClientName, &opt.PoolSize, &opt.MaxIdleConns)
	blockingPool.set(&bopt.ClientName, &bopt.PoolSize, &bopt.MaxIdleConns)
	return redis.NewClient(opt), redis.NewClient(&bopt), closeEmbedded, nil
}

// connect is redisClients for a command that runs once: one function
// closes both clients and the embedded Redis.
func connect(cfg Config, log *slog.Logger) (client, blocking redis.UniversalClient, closeAll func(), err error) {
	client, blocking, closeEmbedded, err := redisClients(cfg, log)
	if err != nil {
		return nil, nil, nil, err
	}
	return client, blocking, func() {
		client.Close()
		blocking.Close()
		closeEmbedded()
	}, nil
}

// urlErr drops the URL from a URL parse error: it may hold a password.
func urlErr(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}

// initStore checks the shard count and clock, retrying while Redis comes up.
func initStore(ctx context.Context, cfg Config, store *rdb.Store, log *slog.Logger) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := store.Init(ctx)
		if err == nil || errors.Is(err, rdb.ErrShardMismatch) || errors.Is(err, rdb.ErrLayout) {
			return err
		}
		if tlsErr := explainTLS(err, cfg); tlsErr != nil {
			return tlsErr // waiting will not change the certificate
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

// ErrEviction is returned by Start when Redis may evict keys: its
// maxmemory-policy is not noeviction, so a full Redis would delete jobs
// silently instead of refusing new ones.
var ErrEviction = errors.New("redis may evict keys")

// checkEviction refuses a Redis whose maxmemory-policy is not noeviction,
// unless cfg allows it (then it warns). The embedded Redis has no policy.
func checkEviction(ctx context.Context, cfg Config, store *rdb.Store, log *slog.Logger) error {
	if cfg.RedisURL == "" {
		return nil
	}
	policy, err := store.MaxmemoryPolicy(ctx)
	if err != nil {
		log.Warn("could not read Redis's maxmemory-policy; make sure it is noeviction", "err", err)
		return nil
	}
	if policy == "" || policy == "noeviction" {
		return nil
	}
	if cfg.AllowEviction {
		log.Warn("Redis's maxmemory-policy is not noeviction: when Redis is full it DELETES JOBS silently (running anyway: KAIROS_ALLOW_EVICTION is set)",
			"maxmemory_policy", policy)
		return nil
	}
	return fmt.Errorf("%w: its maxmemory-policy is %s, so when it is full it deletes keys, and with them scheduled jobs, without a word. "+
		"Set maxmemory-policy noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction): kairos then refuses new jobs "+
		"while Redis is full (HTTP 507) and loses none. To run anyway, set KAIROS_ALLOW_EVICTION=1 (--allow-eviction)", ErrEviction, policy)
}

// Migrate moves the kairos data under cfg's prefix to the layout this
// kairos reads (rdb.Migrate): `kairos migrate`, with every kairos stopped.
func Migrate(ctx context.Context, cfg Config, log *slog.Logger) (rdb.MigrateResult, error) {
	if cfg.RedisURL == "" {
		return rdb.MigrateResult{}, errors.New("KAIROS_REDIS_URL is not set: the embedded Redis keeps nothing to migrate")
	}
	c, _, closeAll, err := connect(cfg, log)
	if err != nil {
		return rdb.MigrateResult{}, err
	}
	defer closeAll()
	return rdb.Migrate(ctx, c, cfg.Prefix)
}
