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

// A process with the worker role alone takes the jobs that a scanner-only
// process pushes onto ready lists, with one blocking pop that covers
// every topic: idle, it makes no pop that returns within seconds.
func TestWorkerAlonePopsReadyJobs(t *testing.T) {
	skipShort(t)
	srv := testredis.New(t)
	url := srv.URL()
	a := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": url, "KAIROS_ROLES": "api,scanner"})
	if _, err := startWorker(t, url); err != nil {
		t.Fatal(err)
	}
	const topics, n = 5, 20
	for i := range topics {
		a.call(t, "PUT", fmt.Sprintf("/v1/topics/t%d", i), `{"callback_url": "`+a.rcvURL+`"}`, http.StatusCreated)
	}
	for i := range n {
		a.call(t, "POST", fmt.Sprintf("/v1/topics/t%d/jobs", i%topics), fmt.Sprintf(`{"delay": "%dms", "payload": %d}`, i*50, i), http.StatusCreated)
	}
	waitHits(t, a.hits, n, 30*time.Second)
	waitDelivered(t, a, n, testwait.Patience) // the last outcomes written
	probe := redis.NewClient(srv.Options())
	defer probe.Close()
	if err := probe.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the point: an idle window, its commands counted
	got := commandCounts(t, probe)
	t.Logf("idle, a scanner process and a worker process with %d topics: %v in 3s", topics, got)
	for _, pop := range []string{"blmpop", "brpop", "rpop", "lmpop"} {
		if got[pop] > 0 {
			t.Errorf("the idle worker process popped its ready lists: %v", got)
		}
	}
}

func startWorker(t *testing.T, url string) (*Instance, error) {
	in, err := startWith(map[string]string{"KAIROS_REDIS_URL": url, "KAIROS_ROLES": "worker"})
	if err == nil {
		t.Cleanup(in.Stop)
	}
	return in, err
}
