package e2e

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// TestRedisRestartWithAOF kills redis-server (AOF, appendfsync everysec)
// while jobs are pending: the API answers 503 while Redis is away, kairos
// reconnects by itself, and every pending job is delivered.
func TestRedisRestartWithAOF(t *testing.T) {
	t.Parallel()
	srv := testredis.New(t, "--appendonly", "yes", "--appendfsync", "everysec")
	opt := &redis.Options{Addr: srv.Addr, DialTimeout: time.Second, MaxRetries: 2}
	rc, blocking := redis.NewClient(opt), redis.NewClient(opt)
	t.Cleanup(func() { rc.Close(); blocking.Close() })
	e := startEngine(t, engineOpts{allowPrivate: true, client: rc, blocking: blocking})
	rcv := newReceiver(t, nil)
	e.putTopic("t", rcv.URL)
	const n = 50
	jobs := make([]client.JobRequest, n)
	for i := range jobs {
		jobs[i] = client.JobRequest{ID: "p" + strconv.Itoa(i), Delay: client.Duration(4*time.Second + time.Duration(i)*20*time.Millisecond)}
	}
	e.createBatch("t", jobs)
	time.Sleep(1500 * time.Millisecond) // appendfsync everysec: acknowledged writes reach the disk within a second
	srv.Kill()

	start := time.Now()
	// Sent once: the client would retry a create with an id on a 503.
	once := e.c.With(client.WithRetryPolicy(client.RetryPolicy{Attempts: 1}))
	_, err := once.CreateJob(context.Background(), "t", client.JobRequest{ID: "during", Delay: client.Duration(time.Second)})
	var problem *client.Error
	t.Logf("create during the outage: %v after %v", err, time.Since(start))
	if !errors.As(err, &problem) || problem.Status != http.StatusServiceUnavailable || problem.RetryAfter <= 0 {
		t.Fatalf("create while Redis is down: %v, want a 503 problem with Retry-After", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the API took %v to answer while Redis was down", d)
	}
	time.Sleep(time.Second) // the point: Redis down a while before it restarts
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	rcv.waitHits(t, n, 30*time.Second)
	waitSettled(t, e.store) // any duplicate has come
	byJob := rcv.byJob()
	dups := 0
	for i := range n {
		hs := byJob["p"+strconv.Itoa(i)]
		if len(hs) == 0 {
			t.Errorf("job p%d lost across the restart", i)
		}
		dups += max(len(hs)-1, 0)
	}
	t.Logf("created %d before the kill, delivered %d, duplicates %d, lost 0", n, len(byJob), dups)
}

// TestHostileReceivers points jobs at receivers that hang, reset the
// connection, fail, rate-limit, redirect to a private address or stream
// 100 MB: each ends as designed, the workers never get stuck and memory
// stays bounded.
func TestHostileReceivers(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	var redirected atomic.Int64
	inner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { redirected.Add(1) }))
	t.Cleanup(inner.Close)
	var peakHeap atomic.Uint64
	mux := http.NewServeMux()
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux.HandleFunc("/reset", func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	})
	mux.HandleFunc("/500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) })
	mux.HandleFunc("/429", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inner.URL+"/metadata", http.StatusFound)
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range 100 { // 100 MB, if the client read it all
			if _, err := w.Write(chunk); err != nil {
				return
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peakHeap.Load() {
				peakHeap.Store(ms.HeapInuse)
			}
		}
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {})
	rcv := httptest.NewServer(mux)
	t.Cleanup(rcv.Close)
	e.putTopicWith("t", client.TopicRequest{
		CallbackURL: rcv.URL + "/ok",
		CallbackSettings: client.CallbackSettings{
			MaxAttempts: 2,
			Timeout:     client.Duration(300 * time.Millisecond),
			Backoff:     &client.Backoff{Initial: client.Duration(20 * time.Millisecond), Max: client.Duration(40 * time.Millisecond)},
		},
	})
	for _, path := range []string{"hang", "reset", "500", "429", "redirect", "huge"} {
		e.create("t", client.JobRequest{ID: path, CallbackURL: rcv.URL + "/" + path})
	}
	want := map[string]string{
		"hang": "timeout after 300ms", "reset": "", "500": "500", "429": "429", "redirect": "302",
	}
	for id, frag := range want {
		v := e.waitState("t", id, "dead", 20*time.Second)
		last := v.AttemptLog[len(v.AttemptLog)-1]
		t.Logf("%s: %d attempts, last: status %d, error %q", id, v.Attempts, last.Status, last.Error)
		if v.Attempts != 2 || !strings.Contains(last.Error, frag) {
			t.Errorf("%s: %d attempts, last error %q; want 2 attempts and an error with %q", id, v.Attempts, last.Error, frag)
		}
	}
	huge := e.waitState("t", "huge", "delivered", 20*time.Second)
	if len(huge.AttemptLog) != 1 || len(huge.AttemptLog[0].Response) > 512 {
		t.Errorf("huge: %+v", huge.AttemptLog)
	}
	if redirected.Load() != 0 {
		t.Errorf("a redirect was followed %d times", redirected.Load())
	}
	// The 429 job waited for its Retry-After (1s) rather than its 20ms backoff.
	v := e.job("t", "429")
	if gap := attemptLogGap(v); gap < 900*time.Millisecond {
		t.Errorf("429 retried after %v; Retry-After said 1s", gap)
	}
	t.Logf("peak heap in use while a receiver streamed 100 MB: %d MiB", peakHeap.Load()>>20)
	// The heap is the whole test process's, other parallel tests included;
	// a client that read the 100 MB body would pass 96 MiB on its own.
	if peakHeap.Load() > 96<<20 {
		t.Errorf("heap grew to %d MiB while a receiver streamed a 100 MB body", peakHeap.Load()>>20)
	}
	// The workers are free: a plain job still goes through at once.
	e.create("t", client.JobRequest{ID: "after"})
	e.waitState("t", "after", "delivered", 10*time.Second)
}
