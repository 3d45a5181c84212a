package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testredis"
)

// TestPriorityAcrossProcesses: two kairos processes over one Redis, a
// topic of parallelism 1 and a slow receiver, 20 jobs due together with
// mixed priorities (held by a pause, then resumed), spread over both
// processes by their pops: the flow's one permit goes in priority order
// across the processes (equal priority in run_at order), not to whichever
// process asks first. The first delivery may be any job: it took the free
// permit before the others were asked about.
func TestPriorityAcrossProcesses(t *testing.T) {
	var mu sync.Mutex
	var got []string
	conns := map[string]int{} // deliveries by connection: a sign of which process sent them
	type span struct {
		conn       string
		start, end time.Time
	}
	var spans []span
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Kairos-Job-Id"))
		conns[r.RemoteAddr]++
		mu.Unlock()
		start := time.Now()
		time.Sleep(100 * time.Millisecond) // the permit is held: every other job waits for it
		mu.Lock()
		spans = append(spans, span{r.RemoteAddr, start, time.Now()})
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	env := map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL(), "KAIROS_SHARDS": "2"}
	a := startTestInstanceOn(t, env)
	b := startTestInstanceOn(t, env)
	a.call(t, "PUT", "/v1/topics/prio", `{"callback_url": "`+rcv.URL+`", "parallelism": 1}`, http.StatusCreated)
	a.call(t, "POST", "/v1/topics/prio/pause", "", http.StatusOK)
	base := time.Now().Add(-time.Second).UTC().Truncate(time.Millisecond)
	jobs := priorityJobs(base, []int{0, 3, 9, 3, 0, 5})
	for i, j := range jobs {
		body := fmt.Sprintf(`{"id": %q, "run_at": %q, "priority": %d}`, j.id, j.at.Format(time.RFC3339Nano), j.prio)
		[]*testInstance{a, b}[i%2].call(t, "POST", "/v1/topics/prio/jobs", body, http.StatusCreated)
	}
	b.call(t, "POST", "/v1/topics/prio/resume", "", http.StatusOK)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 20 delivered after 60s", n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("deliveries by connection: %v", conns)
	// the permit's idle gap: from one answer to the next request, when the
	// next came over the same connection (process) and over the other
	var same, other []time.Duration
	for i := 1; i < len(spans); i++ {
		g := spans[i].start.Sub(spans[i-1].end)
		if spans[i].conn == spans[i-1].conn {
			same = append(same, g)
		} else {
			other = append(other, g)
		}
	}
	t.Logf("idle gaps, same process: %v; other process: %v", same, other)
	// the first delivery went as the permit was free: the rest follow the rule
	wantIDs := priorityOrder(jobs, got[0])
	if !slices.Equal(got[1:], wantIDs) {
		t.Errorf("delivery order after the first (%s)\n got %v\nwant %v", got[0], got[1:], wantIDs)
	}
}
