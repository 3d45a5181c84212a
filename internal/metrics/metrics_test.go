package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
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
		`kairos_ready_list_length{topic="acme/orders"} 1`,
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

// A paused topic and a topic's open circuit breaker are gauges.
func TestFlowControlMetrics(t *testing.T) {
	ctx := context.Background()
	store := rdb.New(testredis.Client(t), rdb.Options{Prefix: testredis.Prefix(t), Shards: 2, NewSecret: callback.NewSecret})
	if err := store.Init(ctx); err != nil {
		t.Fatal(err)
	}
	partner := kairos.Topic{Tenant: "acme", Name: "partner", CallbackURL: "https://example.com", BreakerFailures: 1, BreakerCooldown: time.Minute}
	for _, tp := range []kairos.Topic{partner, {Tenant: "acme", Name: "orders", CallbackURL: "https://example.com"}} {
		if _, _, err := store.PutTopic(ctx, tp); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.PauseTopic(ctx, "acme", "orders", true); err != nil {
		t.Fatal(err)
	}
	m := New()
	m.Watch(Gauges{Store: store})
	if text := scrape(t, m); !strings.Contains(text, `kairos_breaker_state{topic="acme/partner"} 0`+"\n") {
		t.Errorf("metrics lack the closed breaker:\n%s", text)
	}
	if _, err := store.Outcome(ctx, partner, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "partner", ID: "j"}, Attempts: 1}, false); err != nil {
		t.Fatal(err)
	}
	text := scrape(t, m)
	for _, want := range []string{`kairos_breaker_state{topic="acme/partner"} 2`, `kairos_topic_paused{topic="acme/orders"} 1`,
		`kairos_topic_paused{topic="acme/partner"} 0`} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(text, `kairos_breaker_state{topic="acme/orders"}`) {
		t.Error("a topic without a breaker has a breaker gauge")
	}
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
