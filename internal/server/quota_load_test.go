package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestNoisyTenantOverQuotaDoesNotSlowAnother runs kairos on a real
// redis-server with two tenants: quiet creates jobs due at once, at a
// steady pace, first alone and then while noisy, whose quota is 100
// pending jobs and 200 requests a second, hammers the API from 8
// goroutines. Every quiet create must succeed and be delivered; noisy must
// be held to its quota (429s, never more than 100 created). Both tenants'
// figures are printed; timings are reported, not asserted.
func TestNoisyTenantOverQuotaDoesNotSlowAnother(t *testing.T) {
	skipShort(t)
	var mu sync.Mutex
	late := map[string][]time.Duration{} // phase -> quiet jobs' delivery lateness
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at, err := time.Parse(time.RFC3339Nano, r.Header.Get("Kairos-Scheduled-At"))
		body, _ := io.ReadAll(r.Body)
		if err == nil {
			mu.Lock()
			late[strings.Trim(string(body), `"`)] = append(late[strings.Trim(string(body), `"`)], time.Since(at))
			mu.Unlock()
		}
	}))
	t.Cleanup(rcv.Close)
	in, err := startWith(map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Stop)
	token := func(tenant string, admin bool) string {
		tok, err := in.Authn.Mint(tenant, admin, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	quiet := &testInstance{url: in.URL, token: token("quiet", false)}
	noisy := &testInstance{url: in.URL, token: token("noisy", false)}
	admin := &testInstance{url: in.URL, token: token("ops", true)}
	admin.call(t, "PUT", "/v1/tenants/noisy/quota", `{"max_pending": 100, "rate": {"limit": 200, "period": "1s"}}`, http.StatusOK)
	quiet.call(t, "PUT", "/v1/topics/q", `{"callback_url": "`+rcv.URL+`"}`, http.StatusCreated)
	noisy.call(t, "PUT", "/v1/topics/n", `{"callback_url": "`+rcv.URL+`"}`, http.StatusCreated)

	const phase, pace = 3 * time.Second, 10 * time.Millisecond // quiet: about 100 creates a second
	type figures struct {
		created  int
		failed   []string
		latency  []time.Duration
		delivery []time.Duration
	}
	runQuiet := func(name string) figures {
		var f figures
		tick := time.NewTicker(pace)
		defer tick.Stop()
		for end := time.Now().Add(phase); time.Now().Before(end); <-tick.C {
			start := time.Now()
			status, body, err := quiet.do("POST", "/v1/topics/q/jobs", `{"delay": "0s", "payload": "`+name+`"}`)
			f.latency = append(f.latency, time.Since(start))
			if err != nil || status != http.StatusCreated {
				f.failed = append(f.failed, fmt.Sprintf("%d %v %s", status, err, body))
				continue
			}
			f.created++
		}
		testwait.UntilNil(t, 30*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if f.delivery = slices.Clone(late[name]); len(f.delivery) < f.created {
				return fmt.Errorf("%d of %d", len(f.delivery), f.created)
			}
			return nil
		}, "quiet's jobs ("+name+") delivered")
		return f
	}

	base := runQuiet("alone")

	var noisyStatus sync.Map // status -> *atomic.Int64
	var maxPending atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }() // should the test end early
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				status, _, err := noisy.do("POST", "/v1/topics/n/jobs", `{"delay": "1h", "payload": 1}`)
				if err != nil {
					status = 0
				}
				c, _ := noisyStatus.LoadOrStore(status, new(atomic.Int64))
				c.(*atomic.Int64).Add(1)
			}
		})
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			q := readQuota(t, admin, "noisy")
			if q > maxPending.Load() {
				maxPending.Store(q)
			}
			time.Sleep(50 * time.Millisecond) // the pace of the quota's readings
		}
	})
	testwait.Until(t, testwait.Patience, func() bool {
		_, refused := noisyStatus.Load(http.StatusTooManyRequests)
		return refused
	}, "noisy refused with 429: at its limit")
	loaded := runQuiet("noisy")
	stop()
	wg.Wait()

	counts := map[int]int64{}
	noisyStatus.Range(func(k, v any) bool { counts[k.(int)] = v.(*atomic.Int64).Load(); return true })
	t.Logf("noisy (max_pending 100, 200 req/s, 8 goroutines for %s): statuses %v, most pending seen %d", phase, counts, maxPending.Load())
	for _, p := range []struct {
		name string
		f    figures
	}{{"quiet alone", base}, {"quiet beside noisy", loaded}} {
		t.Logf("%s: %d creates (%d failed), create latency p50 %s p99 %s max %s; delivered %d, lateness p50 %s p99 %s max %s",
			p.name, p.f.created, len(p.f.failed), pct(p.f.latency, 50), pct(p.f.latency, 99), pct(p.f.latency, 100),
			len(p.f.delivery), pct(p.f.delivery, 50), pct(p.f.delivery, 99), pct(p.f.delivery, 100))
		if len(p.f.failed) > 0 {
			t.Errorf("%s: creates failed: %v", p.name, p.f.failed[:min(3, len(p.f.failed))])
		}
		if len(p.f.delivery) != p.f.created {
			t.Errorf("%s: %d of %d jobs delivered", p.name, len(p.f.delivery), p.f.created)
		}
	}
	if counts[http.StatusTooManyRequests] == 0 || counts[http.StatusCreated] < 100 {
		t.Errorf("noisy was not held to its quota: %v", counts)
	}
	if n := counts[http.StatusCreated]; n > 100 {
		t.Errorf("noisy created %d jobs through one process, past its max_pending 100", n)
	}
	for status := range counts {
		if status != http.StatusCreated && status != http.StatusTooManyRequests {
			t.Errorf("noisy got %d answers of status %d", counts[status], status)
		}
	}
}

// readQuota returns a tenant's pending jobs as its quota shows them.
func readQuota(t *testing.T, admin *testInstance, tenant string) int64 {
	_, body, err := admin.do("GET", "/v1/tenants/"+tenant+"/quota", "")
	if err != nil {
		return 0
	}
	var n int64
	if i := strings.Index(body, `"pending":`); i >= 0 {
		fmt.Sscanf(body[i+len(`"pending":`):], "%d", &n)
	}
	return n
}

// pct returns the p-th percentile of ds (100: the largest).
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(100 * time.Microsecond)
}
