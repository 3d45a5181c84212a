package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/bench"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/server"
)

// benchKairos is a kairos in this process: API on 127.0.0.1:0, scanner and
// worker, on its own key prefix, with private callback URLs allowed.
type benchKairos struct {
	target bench.Target
	stop   func() error
}

// redisClient is the tool's own client of the Redis kairos runs on, for
// its figures; its commands are not counted as kairos's.
func redisClient(redisURL string) (*redis.Client, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("--redis-url: %w (want redis://host:port)", err)
	}
	opt.ClientName = bench.ClientName
	opt.ReadTimeout = time.Minute // SLOWLOG GET of a full slow log is a large reply
	return redis.NewClient(opt), nil
}

// startKairos starts kairos as `kairos serve` does (internal/server: all
// roles, on its own key prefix, private callback URLs allowed, API on
// 127.0.0.1:0), plus a hook counting the commands it sends. stop shuts it
// down in serve's order and deletes every key under prefix.
func startKairos(ctx context.Context, redisURL, prefix string, shards int, log *slog.Logger) (*benchKairos, error) {
	probe, err := redisClient(redisURL)
	if err != nil {
		return nil, err
	}
	if used, err := rdb.PrefixInUse(ctx, probe, prefix); err != nil || used {
		probe.Close()
		if err != nil {
			return nil, fmt.Errorf("reach Redis: %w", err)
		}
		return nil, fmt.Errorf("--prefix %q is in use on this Redis; the bench deletes its prefix afterwards, so it needs an unused one", prefix)
	}
	env := map[string]string{"KAIROS_REDIS_URL": redisURL, "KAIROS_PREFIX": prefix,
		"KAIROS_ADDR": "127.0.0.1:0", "KAIROS_ALLOW_PRIVATE_URLS": "1", "KAIROS_GRACE": "5s",
		"KAIROS_AUTH_SECRET": randomHex(32)}
	if shards > 0 {
		env["KAIROS_SHARDS"] = strconv.Itoa(shards)
	}
	cfg, err := server.ParseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		probe.Close()
		return nil, err
	}
	sent := &bench.Counter{}
	in, err := server.Start(ctx, cfg, log, countHook{sent})
	if err != nil {
		probe.Close()
		return nil, err
	}
	stop := func() error {
		in.Stop()
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		_, err := rdb.DropPrefix(dctx, probe, prefix)
		probe.Close()
		return err
	}
	token, err := in.Authn.Mint("bench", false, 0)
	if err != nil {
		stop()
		return nil, err
	}
	client := in.Client
	return &benchKairos{stop: stop, target: bench.Target{
		URL: in.URL, Token: token, Redis: benchRedis{probe}, Scripts: rdb.ScriptNames(),
		DropJobs: func(ctx context.Context) (int, error) { return rdb.DropJobs(ctx, probe, prefix) },
		Sent:     sent.Snapshot,
		Counters: func() map[string]int64 {
			st := client.PoolStats()
			return map[string]int64{"pool_waits": int64(st.WaitCount), "pool_wait_ms": st.WaitDurationNs / 1e6, "pool_timeouts": int64(st.Timeouts)}
		},
		StartProcess: func(ctx context.Context) (func(), error) {
			// another process as kairos serve would start it: its own
			// listener, the same Redis, prefix and shards
			in, err := server.Start(ctx, cfg, log)
			if err != nil {
				return nil, err
			}
			return in.Stop, nil
		},
		// the children find the shard count recorded by this process
		ChildEnv: []string{"KAIROS_REDIS_URL=" + redisURL, "KAIROS_PREFIX=" + prefix, "KAIROS_AUTH_SECRET=" + env["KAIROS_AUTH_SECRET"]},
		Name:     fmt.Sprintf("a kairos started in this process (Redis %s, prefix %s, %d shards)", probe.Options().Addr, prefix, in.Shards),
	}}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// benchRedis gives the bench its reads of Redis, on a client of its own.
type benchRedis struct{ c *redis.Client }

func (r benchRedis) Info(ctx context.Context, section string) (string, error) {
	return r.c.Info(ctx, section).Result()
}
func (r benchRedis) ResetStat(ctx context.Context) error { return r.c.ConfigResetStat(ctx).Err() }
func (r benchRedis) Time(ctx context.Context) (time.Time, error) {
	return r.c.Time(ctx).Result()
}
func (r benchRedis) ConfigGet(ctx context.Context, name string) (string, error) {
	m, err := r.c.ConfigGet(ctx, name).Result()
	if err != nil {
		return "", err
	}
	v, ok := m[name]
	if !ok {
		return "", fmt.Errorf("CONFIG GET %s: no such setting", name)
	}
	return v, nil
}
func (r benchRedis) ConfigSet(ctx context.Context, name, value string) error {
	return r.c.ConfigSet(ctx, name, value).Err()
}
func (r benchRedis) SlowlogReset(ctx context.Context) error { return r.c.SlowLogReset(ctx).Err() }
func (r benchRedis) Slowlog(ctx context.Context) ([]bench.SlowlogEntry, error) {
	logs, err := r.c.SlowLogGet(ctx, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("SLOWLOG GET: %w", err)
	}
	out := make([]bench.SlowlogEntry, len(logs))
	for i, l := range logs {
		out[i] = bench.SlowlogEntry{ID: l.ID, USec: l.Duration.Microseconds(), Args: l.Args, Client: l.ClientAddr, ClientName: l.ClientName}
	}
	return out, nil
}

// countHook counts the commands a client sends, pipelined ones each.
type countHook struct{ c *bench.Counter }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.c.Add(cmd.Name())
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.c.Add(c.Name())
		}
		return next(ctx, cmds)
	}
}
