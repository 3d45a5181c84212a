package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testclock"
	"github.com/kairos-sh/kairos/internal/testredis"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	if got := want[map[string]string](t, e.do(t, "GET", "/healthz", "", nil), http.StatusOK); got["status"] != "ok" {
		t.Errorf("healthz: %v", got)
	}
	if got := want[map[string]string](t, e.do(t, "GET", "/readyz", "", nil), http.StatusOK); got["status"] != "ready" {
		t.Errorf("readyz: %v", got)
	}
}

// TestRedisDown points the API at a port nothing listens on: readiness
// and every store call answer 503 with Retry-After, health stays 200.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	port, err := testredis.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1, DialTimeout: time.Second, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	clk := testclock.New(t0)
	store := rdb.New(c, rdb.Options{Prefix: testredis.Prefix(t), Now: clk.Now, NewSecret: callback.NewSecret})
	a := auth.New([]byte(testSecret), clk.Now)
	e := &env{srv: httptest.NewServer(New(store, a, Config{})), auth: a, clock: clk}
	t.Cleanup(e.srv.Close)

	want[map[string]string](t, e.do(t, "GET", "/healthz", "", nil), http.StatusOK)
	res := e.do(t, "GET", "/readyz", "", nil)
	if p := wantProblem(t, res, http.StatusServiceUnavailable); strings.Contains(p.Detail, strconv.Itoa(port)) ||
		strings.Contains(p.Detail, "127.0.0.1") || strings.Contains(p.Detail, "dial") {
		t.Errorf("readyz shows an anonymous caller Redis's error: %q", p.Detail)
	}
	if res.Header.Get("Retry-After") == "" {
		t.Error("readyz 503 without Retry-After")
	}
	acme := e.token(t, "acme", false)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/topics", nil},
		{"PUT", "/v1/topics/orders", obj{"callback_url": hook}},
		{"POST", "/v1/topics/orders/jobs", obj{"delay": "1m"}},
		{"GET", "/v1/topics/orders/jobs/j1", nil},
		{"GET", "/v1/signing-keys", nil},
		{"GET", "/v1/stats", nil},
	} {
		res := e.do(t, c.method, c.path, acme, c.body)
		p := wantProblem(t, res, http.StatusServiceUnavailable)
		if p.Type != problemBase+"unavailable" || res.Header.Get("Retry-After") != "1" {
			t.Errorf("%s %s: type %q Retry-After %q", c.method, c.path, p.Type, res.Header.Get("Retry-After"))
		}
	}
}

// TestUnknownRoutes answers routes the API does not have with problems.
func TestUnknownRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	wantProblem(t, e.do(t, "GET", "/nope", "", nil, offSpec()), http.StatusNotFound)
	wantProblem(t, e.do(t, "GET", "/v1/nope", acme, nil, offSpec()), http.StatusNotFound)
	wantProblem(t, e.do(t, "GET", "/v1/nope", "", nil, offSpec()), http.StatusUnauthorized)
	p := wantProblem(t, e.do(t, "POST", "/healthz", "", nil, offSpec()), http.StatusMethodNotAllowed)
	if p.Type != problemBase+"method-not-allowed" {
		t.Errorf("405 type %q", p.Type)
	}
	wantProblem(t, e.do(t, "POST", "/v1/topics/orders", acme, nil, offSpec()), http.StatusMethodNotAllowed)
}

func TestStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.putTopic(t, acme, "billing", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "s1", "delay": "1h"})
	e.createJob(t, acme, "orders", obj{"id": "s2", "delay": "1h"})
	e.createJob(t, acme, "orders", obj{"id": "r1", "delay": "0s"})
	e.createJob(t, acme, "orders", obj{"id": "d1", "delay": "0s"})
	e.createJob(t, acme, "orders", obj{"id": "x1", "delay": "0s"})
	e.deliveredJob(t, "acme", "orders", "r1")
	e.deadJob(t, "acme", "orders", "d1")

	rec := e.store.NewRecorder()
	rec.Observe("acme", "orders", kairos.StateDelivered, 1, 12*time.Millisecond)
	rec.Observe("acme", "orders", kairos.StateRetrying, 1, 2*time.Millisecond)
	rec.Observe("acme", "orders", kairos.StateDead, 2, 0)
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	got := want[statsResponse](t, e.do(t, "GET", "/v1/stats", acme, nil), http.StatusOK)
	zero, counts := map[kairos.State]int64{}, map[kairos.State]int64{}
	for _, st := range kairos.States {
		zero[st], counts[st] = 0, 0
	}
	counts[kairos.StateScheduled], counts[kairos.StateReady], counts[kairos.StateDelivered], counts[kairos.StateDead] = 2, 1, 1, 1
	wantStats := statsResponse{At: ms(t0), Topics: []topicStats{
		{Tenant: "acme", Topic: "billing", Counts: zero, Recent: recentStats{Minutes: 5}},
		// x1 is ready (due, not claimed yet); the ready list holds only what
		// a scanner-only process claimed for workers elsewhere: nothing here
		{Tenant: "acme", Topic: "orders", Counts: counts, Ready: 0, Recent: recentStats{
			Minutes: 5, Delivered: 1, Failed: 2, Dead: 1, DeliveredPS: 1.0 / 300, FailedPS: 2.0 / 300,
			Lateness: latencyStats{Samples: 2, P50: 2, P90: 15, P99: 15, Max: 15},
		}},
	}}
	if d := cmp.Diff(wantStats, got); d != "" {
		t.Errorf("stats (-want +got):\n%s", d)
	}
}
