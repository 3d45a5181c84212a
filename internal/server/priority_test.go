package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestPriorityAcrossProcesses: two kairos processes over one Redis, a
// topic of parallelism 1 and a slow receiver, 20 jobs due together with
// mixed priorities (held by a pause, then resumed), spread over both
// processes by their pops: the flow's one permit goes in priority order
// across the processes (equal priority in run_at order), not to whichever
// process asks first. The first delivery may be any job: it took the free
// permit before the others were asked about.
func TestPriorityAcrossProcesses(t *testing.T) {
	got := deliveredAcrossProcesses(t, `"parallelism": 1`, 100*time.Millisecond)
	if wantIDs := priorityOrder(got.jobs, got.ids[0]); !slices.Equal(got.ids[1:], wantIDs) {
		t.Errorf("delivery order after the first (%s)\n got %v\nwant %v", got.ids[0], got.ids[1:], wantIDs)
	}
}

// TestRatePriorityAcrossProcesses is TestPriorityAcrossProcesses under a
// rate limit of 5 a second and a quick receiver: the rate's times go in
// priority order across the processes. The first two deliveries may be
// any jobs: the first found the time free, and the second time may be
// within the 100 ms a process holds a job for its time, taken by the job
// asking first (see docs/flow-control.md). The times are 200 ms apart, so
// that a process the machine stalls for less than that cannot swap two
// at the receiver (at 10 a second, a 100 ms stall of a loaded 2-core
// machine running the whole suite did).
func TestRatePriorityAcrossProcesses(t *testing.T) {
	got := deliveredAcrossProcesses(t, `"rate": {"limit": 5, "period": "1s"}`, 0)
	if wantIDs := priorityOrder(got.jobs, got.ids[:2]...); !slices.Equal(got.ids[2:], wantIDs) {
		t.Errorf("delivery order after the first two (%v)\n got %v\nwant %v", got.ids[:2], got.ids[2:], wantIDs)
	}
	for i := 1; i < len(got.starts); i++ {
		if d := got.starts[i].Sub(got.starts[i-1]); d < 50*time.Millisecond {
			t.Errorf("deliveries %d and %d arrived %v apart, at 5 a second", i-1, i, d)
		}
	}
}

// delivered is what deliveredAcrossProcesses saw: the jobs created, the
// ids in the order they reached the receiver, and when each arrived.
type delivered struct {
	jobs   []priorityJob
	ids    []string
	starts []time.Time
}

// deliveredAcrossProcesses runs two kairos processes over one Redis and a
// topic with limits (JSON fields), creates 20 jobs due together with mixed
// priorities while the topic is paused, resumes it, and returns the
// deliveries once all 20 arrived; the receiver takes work to answer.
func deliveredAcrossProcesses(t *testing.T, limits string, work time.Duration) delivered {
	var mu sync.Mutex
	var got delivered
	conns := map[string]int{} // deliveries by connection: a sign of which process sent them
	type span struct {
		conn       string
		start, end time.Time
	}
	var spans []span
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		mu.Lock()
		got.ids = append(got.ids, r.Header.Get("Kairos-Job-Id"))
		got.starts = append(got.starts, start)
		conns[r.RemoteAddr]++
		mu.Unlock()
		time.Sleep(work) // a permit is held meanwhile
		mu.Lock()
		spans = append(spans, span{r.RemoteAddr, start, time.Now()})
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	env := map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL(), "KAIROS_SHARDS": "2"}
	a := startTestInstanceOn(t, env)
	b := startTestInstanceOn(t, env)
	a.call(t, "PUT", "/v1/topics/prio", `{"callback_url": "`+rcv.URL+`", `+limits+`}`, http.StatusCreated)
	a.call(t, "POST", "/v1/topics/prio/pause", "", http.StatusOK)
	base := time.Now().Add(-time.Second).UTC().Truncate(time.Millisecond)
	got.jobs = priorityJobs(base, []int{0, 3, 9, 3, 0, 5})
	createPriorityJobs(t, got.jobs, a, b)
	b.call(t, "POST", "/v1/topics/prio/resume", "", http.StatusOK)
	testwait.Until(t, 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got.ids) >= 20
	}, "20 jobs delivered")
	mu.Lock()
	defer mu.Unlock()
	t.Logf("deliveries by connection: %v", conns)
	// the idle gap: from one answer to the next request, when the next came
	// over the same connection (process) and over the other
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
	return got
}

// TestBreakerProbePriorityAcrossProcesses: two kairos processes, a topic
// whose circuit breaker opens on one failure; 20 jobs of mixed priorities
// created through both while it is open wait for the cool-down, and the
// probe sent when it ends is the job first by the priority rule, whichever
// process asks first. Then the breaker closes and the others go.
func TestBreakerProbePriorityAcrossProcesses(t *testing.T) {
	var mu sync.Mutex
	var ids []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Kairos-Job-Id")
		mu.Lock()
		ids = append(ids, id)
		mu.Unlock()
		if id == "trigger" {
			w.WriteHeader(http.StatusServiceUnavailable) // opens the breaker
		}
	}))
	t.Cleanup(rcv.Close)
	env := map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL(), "KAIROS_SHARDS": "2"}
	a := startTestInstanceOn(t, env)
	b := startTestInstanceOn(t, env)
	a.call(t, "PUT", "/v1/topics/prio", `{"callback_url": "`+rcv.URL+`", "breaker": {"failures": 1, "cooldown": "2s"}, "max_attempts": 1}`, http.StatusCreated)
	a.call(t, "POST", "/v1/topics/prio/jobs", `{"id": "trigger"}`, http.StatusCreated)
	testwait.Until(t, 30*time.Second, func() bool {
		return strings.Contains(a.call(t, "GET", "/v1/topics/prio", "", http.StatusOK), `"state":"open"`)
	}, "the breaker open")
	base := time.Now().Add(-time.Second).UTC().Truncate(time.Millisecond)
	jobs := priorityJobs(base, []int{0, 3, 9, 3, 0, 5})
	createPriorityJobs(t, jobs, a, b)
	testwait.UntilNil(t, 60*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(ids) < 21 {
			return fmt.Errorf("requests %v", ids)
		}
		return nil
	}, "21 requests")
	mu.Lock()
	defer mu.Unlock()
	if want := priorityOrder(jobs)[0]; ids[0] != "trigger" || ids[1] != want {
		t.Errorf("requests %v: want the trigger, then the probe %s", ids, want)
	}
}
