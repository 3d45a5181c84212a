package server

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestAllInOneDeliversThroughBlockingPops: the default process (api,
// scanner, worker) takes its jobs from the ready lists its scanner fills,
// with blocking pops: a delivery run shows BLMPOP calls, the claim's
// LPUSH onto the lists, and the start of what was popped, in INFO
// commandstats.
func TestAllInOneDeliversThroughBlockingPops(t *testing.T) {
	srv := testredis.New(t)
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": srv.URL()})
	const topics, n = 3, 30
	for i := range topics {
		ti.call(t, "PUT", fmt.Sprintf("/v1/topics/t%d", i), `{"callback_url": "`+ti.rcvURL+`"}`, http.StatusCreated)
	}
	probe := redis.NewClient(srv.Options())
	defer probe.Close()
	if err := probe.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		ti.call(t, "POST", fmt.Sprintf("/v1/topics/t%d/jobs", i%topics), fmt.Sprintf(`{"delay": "%dms", "payload": %d}`, 200+i*20, i), http.StatusCreated)
	}
	waitHits(t, ti.hits, n, 30*time.Second)
	got := commandCounts(t, probe)
	t.Logf("a delivery run of %d jobs in one process: blmpop %d, lpush %d, fcall %d, evalsha %d", n, got["blmpop"], got["lpush"], got["fcall"], got["evalsha"])
	if got["blmpop"]+got["brpop"] == 0 {
		t.Errorf("no blocking pop during a delivery run: %v", got)
	}
	if got["lpush"] == 0 {
		t.Errorf("no push onto a ready list during a delivery run: %v", got)
	}
	if got["lmpop"]+got["rpop"] > 0 {
		t.Errorf("non-blocking pops during a delivery run: %v", got)
	}
}

// TestIdleProcessCostsRedisLittle: an all-in-one process with 100 topics
// and nothing due holds no shard mutex and sends Redis about nothing: its
// blocking pops time out now and then, its scanner says it is alive, and
// its subscription is pinged. It logs the commands a second.
func TestIdleProcessCostsRedisLittle(t *testing.T) {
	skipShort(t)
	srv := testredis.New(t)
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": srv.URL()})
	for i := range 100 {
		ti.call(t, "PUT", fmt.Sprintf("/v1/topics/t%03d", i), `{"callback_url": "`+ti.rcvURL+`"}`, http.StatusCreated)
	}
	ti.call(t, "POST", "/v1/topics/t000/jobs", `{"delay": "1h", "payload": 1}`, http.StatusCreated)
	ti.call(t, "POST", "/v1/topics/t001/jobs", `{"delay": "0s", "payload": 1}`, http.StatusCreated)
	waitHits(t, ti.hits, 1, 30*time.Second)
	probe := redis.NewClient(srv.Options())
	defer probe.Close()
	ctx := context.Background()
	// the scanner looks once more when the job's pop lease would have
	// lapsed, then gives every mutex back
	testwait.UntilNil(t, 30*time.Second, func() error {
		locks, err := probe.Keys(ctx, "*:lock").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(locks) > 0 {
			return fmt.Errorf("held: %v", locks)
		}
		return nil
	}, "every shard mutex given back after the delivery")
	if err := probe.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const window = 20 * time.Second
	time.Sleep(window) // the point: an idle window, its commands counted
	got := commandCounts(t, probe)
	total := int64(0)
	for _, n := range got {
		total += n
	}
	perSec := float64(total) / window.Seconds()
	t.Logf("idle, one process with 100 topics: %d commands in %v (%.2f a second): %v", total, window, perSec, got)
	if perSec > 1 {
		t.Errorf("%.2f commands a second at idle, want at most 1: %v", perSec, got)
	}
	locks, err := probe.Keys(ctx, "*:lock").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) != 0 {
		t.Errorf("shard mutexes held while idle: %v", locks)
	}
}
