package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
)

func TestMain(m *testing.M) { os.Exit(testredis.Main(m)) }

func TestMetricsExposition(t *testing.T) {
	ctx := context.Background()
	client := testredis.Client(t)
	store := rdb.New(client, rdb.Options{Prefix: testredis.Prefix(t), Shards: 4, NewSecret: callback.NewSecret})
	if err := store.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.PutTopic(ctx, kairos.Topic{Tenant: "acme", Name: "orders", CallbackURL: "https://example.com"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := store.Enqueue(ctx, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "orders", ID: id}, RunAt: store.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Enqueue(ctx, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "orders", ID: "now"}, RunAt: store.Now()}); err != nil {
		t.Fatal(err)
	}
	// The due one is claimed onto its ready list, and waits for a worker.
	for sh := range store.Shards() {
		if _, err := store.Claim(ctx, sh, 10, 0, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	m := New()
	mainPool := &redis.PoolStats{TotalConns: 3}
	mainPool.PubSubStats.Active = 1
	m.Watch(Gauges{Store: store, LocksHeld: func() int { return 3 }, InFlight: func() int64 { return 2 },
		Pools: map[string]func() *redis.PoolStats{
			"main":     func() *redis.PoolStats { return mainPool },
			"blocking": func() *redis.PoolStats { return &redis.PoolStats{TotalConns: 5} },
		}})
	client.AddHook(m.Hook())
	for range 4 {
		m.Created("acme", "orders")
	}
	job := kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "orders", ID: "a"}}
	m.Attempt(callback.Event{Job: job, Attempt: kairos.Attempt{N: 1, Duration: 30 * time.Millisecond}, State: kairos.StateRetrying, Lateness: 2 * time.Millisecond})
	m.Attempt(callback.Event{Job: job, Attempt: kairos.Attempt{N: 2, Duration: 10 * time.Millisecond}, State: kairos.StateDead})
	m.Attempt(callback.Event{Job: job, Attempt: kairos.Attempt{N: 1, Duration: 5 * time.Millisecond}, State: kairos.StateDelivered, Lateness: time.Millisecond})
	gone := kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "orders", ID: "b"}}
	m.Attempt(callback.Event{Job: gone, Attempt: kairos.Attempt{N: 1, Status: http.StatusGone}, State: kairos.StateDead})
	client.Do(ctx, "NOSUCHCOMMAND") // one Redis error

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	text := string(body)
	for _, want := range []string{
		`kairos_jobs_created_total{topic="acme/orders"} 4`,
		`kairos_jobs_delivered_total{topic="acme/orders"} 1`,
		`kairos_attempts_failed_total{topic="acme/orders"} 3`,
		`kairos_jobs_dead_total{topic="acme/orders"} 2`,
		`kairos_gone_total{topic="acme/orders"} 1`, // the 410, not the other dead job
		`kairos_attempt_duration_seconds_count{topic="acme/orders"} 4`,
		`kairos_lateness_seconds_count{topic="acme/orders"} 3`,
		`kairos_scanner_locks_held 3`,
		`kairos_callbacks_in_flight 2`,
		`kairos_redis_up 1`,
		`kairos_redis_errors_total 1`,
		`kairos_redis_connections{pool="main"} 4`, // its pool's and pub/sub
		`kairos_redis_connections{pool="blocking"} 5`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	var depth int
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "kairos_bucket_depth{") {
			var n int
			fields := strings.Fields(line)
			if _, err := fmt.Sscan(fields[len(fields)-1], &n); err == nil {
				depth += n
			}
		}
	}
	if depth != 4 { // the jobs stored: three scheduled and the claimed one
		t.Errorf("bucket depths sum to %d, want 4\n%s", depth, text)
	}
}

// TestConnectionsCountsEveryPoolOfAClient: a client that ran a command, a
// pipeline and a subscription has connections in three go-redis pools;
// Connections counts what CLIENT LIST shows under its name.
func TestConnectionsCountsEveryPoolOfAClient(t *testing.T) {
	ctx := context.Background()
	opt, err := redis.ParseURL(testredis.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	opt.ClientName = testredis.Prefix(t)
	c := redis.NewClient(opt)
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { p.Ping(ctx); p.Ping(ctx); return nil }); err != nil {
		t.Fatal(err)
	}
	sub := c.Subscribe(ctx, opt.ClientName)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	list, err := testredis.Client(t).ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	listed := strings.Count(list, " name="+opt.ClientName+" ")
	if got := Connections(c.PoolStats()); got != listed || listed < 3 {
		t.Errorf("Connections = %d; CLIENT LIST shows %d under the client's name, want the same and at least 3 (command, pipeline, pub/sub):\n%s", got, listed, list)
	}
}

// TestOccurrenceMetrics: attempts of schedules' occurrences count them
// fired (first attempts), delivered and dead per topic; a plain job's
// attempts do not.
func TestOccurrenceMetrics(t *testing.T) {
	m := New()
	occ := func(id string) kairos.Job {
		return kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "ticks", ID: id}}
	}
	for _, e := range []callback.Event{
		{Job: occ("tick@1000"), Attempt: kairos.Attempt{N: 1, Status: 204}, State: kairos.StateDelivered},
		{Job: occ("tick@2000"), Attempt: kairos.Attempt{N: 1, Status: 500}, State: kairos.StateRetrying},
		{Job: occ("tick@2000"), Attempt: kairos.Attempt{N: 2, Status: 204}, State: kairos.StateDelivered},
		{Job: occ("tick@3000"), Attempt: kairos.Attempt{N: 1, Status: 500}, State: kairos.StateRetrying},
		{Job: occ("tick@3000"), Attempt: kairos.Attempt{N: 2, Status: 500}, State: kairos.StateDead},
		{Job: occ("tick@4000"), Attempt: kairos.Attempt{N: 1, Status: 410}, State: kairos.StateDead},
		{Job: occ("plain"), Attempt: kairos.Attempt{N: 1, Status: 204}, State: kairos.StateDelivered},
		{Job: occ("user@example"), Attempt: kairos.Attempt{N: 1, Status: 500}, State: kairos.StateDead},
	} {
		m.Attempt(e)
	}
	text := scrape(t, m)
	for _, want := range []string{
		`kairos_occurrences_fired_total{topic="acme/ticks"} 4`,
		`kairos_occurrences_delivered_total{topic="acme/ticks"} 2`,
		`kairos_occurrences_dead_total{topic="acme/ticks"} 2`,
		`kairos_jobs_delivered_total{topic="acme/ticks"} 3`,
		`kairos_jobs_dead_total{topic="acme/ticks"} 3`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestScrapeCostsRedisNothingPerTopic counts the Redis commands of a
// scrape with no topic and with 40 topics (paused ones, ones with a
// circuit breaker, ready jobs): the same few, and none that lists topics or
// reads a topic's ready list, pause or breaker. Before, each scrape read
// the topic list, one LLEN a topic and one HMGET a breaker.
func TestScrapeCostsRedisNothingPerTopic(t *testing.T) {
	ctx := context.Background()
	client := testredis.Client(t)
	store := rdb.New(client, rdb.Options{Prefix: testredis.Prefix(t), Shards: 4, NewSecret: callback.NewSecret})
	if err := store.Init(ctx); err != nil {
		t.Fatal(err)
	}
	var cmds commandLog
	client.AddHook(&cmds)
	m := New()
	m.Watch(Gauges{Store: store})
	scrape(t, m) // opens the connections: their handshakes are not the scrape's
	cmds.take()
	scrape(t, m)
	empty := cmds.take()
	for i := range 40 {
		tp := kairos.Topic{Tenant: fmt.Sprintf("t%d", i%4), Name: fmt.Sprintf("topic%d", i), CallbackURL: "https://example.com"}
		if i%3 == 0 {
			tp.BreakerFailures, tp.BreakerCooldown = 1, time.Minute
		}
		if _, _, err := store.PutTopic(ctx, tp); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			if _, err := store.PauseTopic(ctx, tp.Tenant, tp.Name, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmds.take()
	text := scrape(t, m)
	full := cmds.take()
	if len(full) != len(empty) {
		t.Errorf("a scrape sends %d commands with 40 topics, %d with none: %v", len(full), len(empty), full)
	}
	for _, c := range full {
		switch c {
		case "llen", "hgetall", "smembers", "hmget", "scan", "hget":
			t.Errorf("a scrape sends %s: %v", c, full)
		}
	}
	if strings.Contains(text, "topic=") {
		t.Errorf("with no attempt made, a scrape names topics:\n%s", text)
	}
}

// commandLog is a go-redis hook that notes the name of every command.
type commandLog struct {
	mu    sync.Mutex
	names []string
}

func (l *commandLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.names
	l.names = nil
	return out
}

func (l *commandLog) note(cmds ...redis.Cmder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range cmds {
		l.names = append(l.names, c.Name())
	}
}

func (l *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { l.note(cmd); return next(ctx, cmd) }
}
func (l *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { l.note(cmds...); return next(ctx, cmds) }
}

// scrape returns m's metrics as a scraper reads them.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// redisErr is an error reply of Redis, as go-redis makes them.
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

// TestFailedCountsRealFailuresOnly: the refusals kairos expects and
// handles are no failures; anything else is.
func TestFailedCountsRealFailuresOnly(t *testing.T) {
	ctx := context.Background()
	cmd := func(err error, args ...any) redis.Cmder {
		c := redis.NewCmd(ctx, args...)
		c.SetErr(err)
		return c
	}
	for _, tc := range []struct {
		name   string
		cmd    redis.Cmder
		failed bool
	}{
		{"function load on a server without functions", cmd(redisErr("ERR unknown command `function`, with args beginning with: `load` `replace` "), "function", "load", "replace", "#!lua"), false},
		{"function load on Redis 6", cmd(redisErr("ERR unknown command 'FUNCTION'"), "FUNCTION", "LOAD", "#!lua"), false},
		{"function load refused for another reason", cmd(redisErr("ERR Error compiling function"), "function", "load", "replace", "#!lua"), true},
		{"function load without permission", cmd(redisErr("NOPERM this user has no permissions to run the 'function|load' command"), "function", "load"), true},
		{"an unknown command that is not FUNCTION", cmd(redisErr("ERR unknown command `fcall`"), "fcall", "f", 0), true},
		{"blmpop on a server without it", cmd(redisErr("ERR unknown command `blmpop`, with args beginning with: `30` `2` "), "blmpop", 30, 2, "k1", "k2", "right", "count", 10), false},
		{"lmpop on a server without it", cmd(redisErr("ERR unknown command `lmpop`"), "lmpop", 1, "k", "right"), false},
		{"blmpop refused for another reason", cmd(redisErr("WRONGTYPE Operation against a key holding the wrong kind of value"), "blmpop", 30, 1, "k", "right"), true},
		{"client setinfo on Redis 7.0", cmd(redisErr("ERR unknown subcommand 'setinfo'"), "client", "setinfo", "lib-name", "go-redis"), false},
		{"noscript", cmd(redisErr("NOSCRIPT No matching script"), "evalsha", "abc", 0), false},
		{"an empty reply", cmd(redis.Nil, "get", "k"), false},
		{"a wrong type", cmd(redisErr("WRONGTYPE Operation against a key holding the wrong kind of value"), "get", "k"), true},
	} {
		if got := failed(tc.cmd, tc.cmd.Err()); got != tc.failed {
			t.Errorf("%s: failed = %t, want %t", tc.name, got, tc.failed)
		}
	}
}
