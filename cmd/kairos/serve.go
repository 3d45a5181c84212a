package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/rdb"
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
	cfg, err := parseConfig(args, getenv, usageOut(args, stdout, stderr))
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	in, err := start(ctx, cfg, log)
	if err != nil {
		return err
	}
	if cfg.Roles["api"] && cfg.RedisURL == "" {
		// The banner comes before the line that says kairos is listening, so
		// whoever waits for that line finds the token already printed.
		if err := printBanner(stdout, cfg, in); err != nil {
			in.stop()
			return err
		}
	}
	log.Info("kairos listening", "url", in.url, "roles", roleList(cfg))
	<-ctx.Done()
	log.Info("shutting down", "grace", cfg.Grace)
	in.stop()
	log.Info("kairos stopped")
	return nil
}

// printBanner tells a user trying kairos on the embedded Redis where it
// runs, how to get in, and how to point callbacks at a local receiver.
func printBanner(w io.Writer, cfg Config, in *instance) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nkairos is running at %s (embedded Redis: nothing persists)\n\n", in.url)
	if cfg.AuthSecret == "" {
		tok, err := in.authn.Mint("admin", true, 0)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "Admin token (valid as long as this process runs: its secret was generated at start and dies with it):\n\n  %s\n\n"+
			"Open %s/ and paste the token, or try:\n  curl -H 'Authorization: Bearer %s' %s/v1/topics\n\n", tok, in.url, tok, in.url)
	} else {
		fmt.Fprintf(&b, "API tokens are signed with your KAIROS_AUTH_SECRET. Mint one with the same secret set:\n\n"+
			"  go run ./cmd/kairos token --tenant admin --admin     (or bin/kairos token ... after make build)\n\n"+
			"then open %s/ and paste it.\n\n", in.url)
	}
	if cfg.AllowPrivate {
		b.WriteString("Callbacks to loopback and private addresses are allowed (--allow-private-urls).\n\n")
	} else {
		b.WriteString("Callbacks to localhost, loopback and private addresses are refused. To try kairos with a\n" +
			"receiver on this machine, start it with --allow-private-urls (or KAIROS_ALLOW_PRIVATE_URLS=1).\n\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// redisClients connects to KAIROS_REDIS_URL (a Redis Cluster when
// KAIROS_REDIS_CLUSTER is set) or starts the embedded Redis. It returns the
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
		bopt := *opt
		mainPool.set(&opt.ClientName, &opt.PoolSize, &opt.MaxIdleConns)
		blockingPool.set(&bopt.ClientName, &bopt.PoolSize, &bopt.MaxIdleConns)
		return redis.NewClusterClient(opt), redis.NewClusterClient(&bopt), func() {}, nil
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
	bopt := *opt
	mainPool.set(&opt.ClientName, &opt.PoolSize, &opt.MaxIdleConns)
	blockingPool.set(&bopt.ClientName, &bopt.PoolSize, &bopt.MaxIdleConns)
	return redis.NewClient(opt), redis.NewClient(&bopt), closeEmbedded, nil
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
