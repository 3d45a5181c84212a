package server

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestIdleConnections measures the Redis connections of one process with
// 100 topics once it is idle, by client name in CLIENT LIST (at most its
// shards + 4: the blocking pops must not grow with topics), after it
// delivered a job in every topic at once; /metrics
// must report the same. It logs the figures the README quotes, and those
// of a process running the worker role alone, held to the same bound.
func TestIdleConnections(t *testing.T) {
	skipShort(t)
	const topics = 100
	srv := testredis.New(t)
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": srv.URL()})
	for i := range topics {
		ti.call(t, "PUT", fmt.Sprintf("/v1/topics/t%03d", i), `{"callback_url": "`+ti.rcvURL+`"}`, http.StatusCreated)
	}
	var busy clients
	stopSampling, sampling := make(chan struct{}), sync.WaitGroup{}
	sampling.Go(func() { busy = peakClients(srv, stopSampling) })
	stopPeak := sync.OnceFunc(func() { close(stopSampling); sampling.Wait() })
	defer stopPeak()
	var wg sync.WaitGroup
	for i := range topics {
		wg.Go(func() {
			if status, b, err := ti.do("POST", fmt.Sprintf("/v1/topics/t%03d/jobs", i), `{"delay": "0s", "payload": 1}`); err != nil || status != http.StatusCreated {
				t.Errorf("create in t%03d: %d %s %v", i, status, b, err)
			}
		})
	}
	wg.Wait()
	waitHits(t, ti.hits, topics, 30*time.Second)
	stopPeak()
	ti.call(t, "POST", "/v1/topics/t000/jobs", `{"delay": "1h", "payload": 1}`, http.StatusCreated) // nothing due for the next hour
	idle := idleClients(t, srv, "kairos:")
	t.Logf("one process (api, scanner, worker), %d topics: at most %s while %d jobs were created at once and delivered; %s at idle", topics, busy, topics, idle)
	if n := idle.total(); n > rdb.DefaultShards+4 {
		t.Errorf("%d connections at idle, want at most %d (the shards + 4): %s", n, rdb.DefaultShards+4, idle)
	}
	metrics := ti.call(t, "GET", "/metrics", "", http.StatusOK)
	idle = idleClients(t, srv, "kairos:")
	for _, pool := range []string{"main", "blocking"} {
		line := fmt.Sprintf("kairos_redis_connections{pool=%q} %d\n", pool, idle["kairos:"+pool])
		if !strings.Contains(metrics, line) {
			t.Errorf("/metrics lacks %q (CLIENT LIST: %s):\n%s", line, idle, grepLines(metrics, "kairos_redis_connections"))
		}
	}

	// A process with the worker role alone pops the ready lists that
	// scanner-only processes fill: one blocking pop covers every topic, so
	// its connections do not grow with them.
	in, err := startWith(map[string]string{"KAIROS_REDIS_URL": srv.URL() + "?client_name=worker", "KAIROS_ROLES": "worker"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Stop)
	worker := idleClients(t, srv, "worker:")
	t.Logf("a process with the worker role alone, %d topics: %s at idle", topics, worker)
	if n := worker.total(); n > rdb.DefaultShards+4 {
		t.Errorf("%d connections at idle for %d topics' consumers, want at most %d: %s", n, topics, rdb.DefaultShards+4, worker)
	}
}

// clients counts connections by client name.
type clients map[string]int

func (c clients) total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

func (c clients) String() string {
	var parts []string
	for name, n := range c {
		parts = append(parts, name+"="+strconv.Itoa(n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d connections (%s)", c.total(), strings.Join(parts, ", "))
}

// clientsByName reads CLIENT LIST of srv, leaving out the connection that asks.
func clientsByName(t *testing.T, srv *testredis.Server) clients {
	t.Helper()
	c, err := listClients(srv)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func listClients(srv *testredis.Server) (clients, error) {
	opt := srv.Options()
	opt.ClientName = "test"
	c := redis.NewClient(opt)
	defer c.Close()
	list, err := c.ClientList(context.Background()).Result()
	if err != nil {
		return nil, err
	}
	out := clients{}
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		for _, f := range strings.Fields(line) {
			if name, ok := strings.CutPrefix(f, "name="); ok && name != "test" {
				if name == "" {
					name = "unnamed yet" // in go-redis's handshake, before CLIENT SETNAME
				}
				out[name]++
			}
		}
	}
	return out, nil
}

// peakClients samples CLIENT LIST until stop is closed and returns the
// sample with the most connections.
func peakClients(srv *testredis.Server, stop <-chan struct{}) clients {
	var peak clients
	for {
		if c, err := listClients(srv); err == nil && c.total() > peak.total() {
			peak = c
		}
		select {
		case <-stop:
			return peak
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// idleClients waits until the connections named with prefix have not
// changed for 3 s (at most 30 s) and returns them.
func idleClients(t *testing.T, srv *testredis.Server, prefix string) clients {
	t.Helper()
	mine := func() clients {
		out := clients{}
		for name, n := range clientsByName(t, srv) {
			if strings.HasPrefix(name, prefix) {
				out[name] = n
			}
		}
		return out
	}
	last, since := mine(), time.Now()
	testwait.Until(t, 30*time.Second, func() bool {
		if now := mine(); now.String() != last.String() {
			last, since = now, time.Now()
		}
		return time.Since(since) >= 3*time.Second
	}, "the connections named "+prefix+"* unchanged for 3 s")
	return last
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
