package server

import (
	"encoding/json"
	"fmt"
	"io"
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

// noticeSink is a failure_url receiver that keeps the bodies it gets.
type noticeSink struct {
	mu     sync.Mutex
	bodies []map[string]any
	url    string
}

func newNoticeSink(t *testing.T) *noticeSink {
	t.Helper()
	s := &noticeSink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		raw, _ := io.ReadAll(r.Body)
		if json.Unmarshal(raw, &b) == nil {
			s.mu.Lock()
			s.bodies = append(s.bodies, b)
			s.mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// wait returns the first notice, waiting up to 30s for it.
func (s *noticeSink) wait(t *testing.T) (b map[string]any) {
	t.Helper()
	testwait.Until(t, 30*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.bodies) == 0 {
			return false
		}
		b = s.bodies[0]
		return true
	}, "a failure notification")
	return b
}

type jobView struct {
	State      string `json:"state"`
	Attempts   int    `json:"attempts"`
	ExpiresAt  string `json:"expires_at"`
	AttemptLog []struct {
		N     int    `json:"n"`
		Event string `json:"event"`
	} `json:"attempt_log"`
}

// waitState polls job id of topic until it is in state want, for up to 30s.
func waitState(t *testing.T, ti *testInstance, topic, id, want string) jobView {
	t.Helper()
	var j jobView
	testwait.UntilNil(t, 30*time.Second, func() error {
		j = jobView{}
		if err := json.Unmarshal([]byte(ti.call(t, "GET", "/v1/topics/"+topic+"/jobs/"+id, "", http.StatusOK)), &j); err != nil {
			t.Fatal(err)
		}
		if j.State != want {
			return fmt.Errorf("it is %s", j.State)
		}
		return nil
	}, "job "+id+" "+want)
	return j
}

// TestJobExpiresBeforeItsFirstAttempt: a job of a paused topic whose
// expiry passes while it is held never reaches its receiver after resume:
// it ends expired with no attempt, its failure_url is told with "state":
// "expired", it is counted in /v1/stats, listed under ?state=expired and
// in /metrics; replayed, it loses its expiry and is delivered.
func TestJobExpiresBeforeItsFirstAttempt(t *testing.T) {
	sink := newNoticeSink(t)
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	ti.call(t, "PUT", "/v1/topics/exp", `{"callback_url": "`+ti.rcvURL+`", "failure_url": "`+sink.url+`"}`, http.StatusCreated)
	ti.call(t, "POST", "/v1/topics/exp/pause", "", http.StatusOK)
	var created jobView
	if err := json.Unmarshal([]byte(ti.call(t, "POST", "/v1/topics/exp/jobs", `{"id": "late", "ttl": "300ms", "payload": 1}`, http.StatusCreated)), &created); err != nil {
		t.Fatal(err)
	}
	exp, err := time.Parse(time.RFC3339Nano, created.ExpiresAt)
	if err != nil {
		t.Fatalf("expires_at %q in the answer: %v", created.ExpiresAt, err)
	}
	time.Sleep(time.Until(exp.Add(100 * time.Millisecond))) // the point: the expiry passes while the topic is paused
	ti.call(t, "POST", "/v1/topics/exp/resume", "", http.StatusOK)
	j := waitState(t, ti, "exp", "late", "expired")
	if j.Attempts != 0 || len(j.AttemptLog) != 1 || j.AttemptLog[0].Event != "expired" || j.AttemptLog[0].N != 0 {
		t.Errorf("expired job: attempts %d, log %+v; want 0 attempts and one entry {n: 0, event: expired}", j.Attempts, j.AttemptLog)
	}
	if n := ti.hits.Load(); n != 0 {
		t.Errorf("the receiver was called %d times for a job that expired first", n)
	}
	if b := sink.wait(t); b["state"] != "expired" || b["job_id"] != "late" {
		t.Errorf("failure notification %v, want state expired for job late", b)
	}
	var stats struct {
		Topics []struct {
			Counts map[string]int64 `json:"counts"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(ti.call(t, "GET", "/v1/stats", "", http.StatusOK)), &stats); err != nil {
		t.Fatal(err)
	}
	if len(stats.Topics) != 1 || stats.Topics[0].Counts["expired"] != 1 || stats.Topics[0].Counts["scheduled"] != 0 {
		t.Errorf("stats counts %+v, want expired 1 and nothing scheduled", stats.Topics)
	}
	if l := ti.call(t, "GET", "/v1/topics/exp/jobs?state=expired", "", http.StatusOK); !strings.Contains(l, `"id":"late"`) {
		t.Errorf("?state=expired lists %s, want job late", l)
	}
	if m := ti.call(t, "GET", "/metrics", "", http.StatusOK); !strings.Contains(m, `kairos_jobs_expired_total{topic="acme/exp"} 1`) {
		t.Error("no kairos_jobs_expired_total 1 for acme/exp in /metrics")
	}
	// a PATCH is refused like a dead job's; a replay delivers it
	ti.call(t, "PATCH", "/v1/topics/exp/jobs/late", `{"delay": "1s"}`, http.StatusConflict)
	ti.call(t, "POST", "/v1/topics/exp/jobs/late/retry", "", http.StatusAccepted)
	j = waitState(t, ti, "exp", "late", "delivered")
	if j.ExpiresAt != "" || ti.hits.Load() != 1 {
		t.Errorf("replayed: expires_at %q, %d callbacks; want no expiry and one callback", j.ExpiresAt, ti.hits.Load())
	}
}

// TestExpiryStopsRetriesMidBackoff: a job whose receiver fails and asks
// for a retry after its expiry ends expired as that attempt fails, not
// retrying: one callback, its failure_url told with "state": "expired".
func TestExpiryStopsRetriesMidBackoff(t *testing.T) {
	var calls sync.Map
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := calls.LoadOrStore("n", new(int))
		*n.(*int)++
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(rcv.Close)
	sink := newNoticeSink(t)
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	ti.call(t, "PUT", "/v1/topics/flaky", `{"callback_url": "`+rcv.URL+`", "failure_url": "`+sink.url+`"}`, http.StatusCreated)
	ti.call(t, "POST", "/v1/topics/flaky/jobs", `{"id": "j", "ttl": "30s", "max_attempts": 5}`, http.StatusCreated)
	j := waitState(t, ti, "flaky", "j", "expired")
	if j.Attempts != 1 || len(j.AttemptLog) != 1 || j.AttemptLog[0].Event != "" {
		t.Errorf("attempts %d, log %+v; want the one failed attempt", j.Attempts, j.AttemptLog)
	}
	b := sink.wait(t)
	if b["state"] != "expired" || b["attempts"] != float64(1) {
		t.Errorf("failure notification %v, want state expired after 1 attempt", b)
	}
	if n, _ := calls.Load("n"); *n.(*int) != 1 {
		t.Errorf("%d callbacks, want 1", *n.(*int))
	}
}

// TestExpiryFields: expires_at and ttl are refused together, and an
// expiry before run_at is refused; nothing is created.
func TestExpiryFields(t *testing.T) {
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	ti.call(t, "PUT", "/v1/topics/f", `{"callback_url": "`+ti.rcvURL+`"}`, http.StatusCreated)
	at := time.Now().Add(time.Hour).UTC()
	for _, c := range []struct{ body, field string }{
		{`{"id": "a", "expires_at": "` + at.Format(time.RFC3339) + `", "ttl": "1m"}`, "ttl"},
		{`{"id": "b", "run_at": "` + at.Format(time.RFC3339) + `", "expires_at": "` + at.Add(-time.Minute).Format(time.RFC3339) + `"}`, "expires_at"},
		{`{"id": "c", "priority": 10}`, "priority"},
		{`{"id": "d", "priority": -1}`, "priority"},
		{`{"id": "e", "ttl": "-1s"}`, "ttl"},
	} {
		b := ti.call(t, "POST", "/v1/topics/f/jobs", c.body, http.StatusBadRequest)
		if !strings.Contains(b, fmt.Sprintf(`"field":%q`, c.field)) && !strings.Contains(b, fmt.Sprintf(`"name":%q`, c.field)) {
			t.Errorf("%s: %s does not name %s", c.body, b, c.field)
		}
	}
	if l := ti.call(t, "GET", "/v1/topics/f/jobs", "", http.StatusOK); strings.Contains(l, `"id"`) {
		t.Errorf("refused creates left jobs: %s", l)
	}
}

// TestPriorityUnderParallelismOne: 20 jobs of a topic of parallelism 1,
// due together (held by a pause, then resumed) with mixed priorities and
// run_at times, reach the receiver highest priority first, and in run_at
// order within a priority, whatever order they were created in.
func TestPriorityUnderParallelismOne(t *testing.T) {
	var mu sync.Mutex
	var got []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Kairos-Job-Id"))
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // the flow's one permit is held a moment: the others wait
	}))
	t.Cleanup(rcv.Close)
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL(), "KAIROS_SHARDS": "1"})
	ti.call(t, "PUT", "/v1/topics/prio", `{"callback_url": "`+rcv.URL+`", "parallelism": 1}`, http.StatusCreated)
	ti.call(t, "POST", "/v1/topics/prio/pause", "", http.StatusOK)
	base := time.Now().Add(-time.Second).UTC().Truncate(time.Millisecond)
	jobs := priorityJobs(base, []int{0, 3, 9, 3, 0})
	createPriorityJobs(t, jobs, ti)
	ti.call(t, "POST", "/v1/topics/prio/resume", "", http.StatusOK)
	testwait.Until(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 20
	}, "20 jobs delivered")
	wantIDs := priorityOrder(jobs)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, wantIDs) {
		t.Errorf("delivery order\n got %v\nwant %v", got, wantIDs)
	}
}

// priorityJob is a job of the priority tests: its id, priority and run_at.
type priorityJob struct {
	id   string
	prio int
	at   time.Time
}

// priorityJobs are 20 jobs due 1 ms apart from base, with priorities
// cycling through prios, in an order of their own: i*7 mod 20 walks every
// index once.
func priorityJobs(base time.Time, prios []int) []priorityJob {
	var jobs []priorityJob
	for i := range 20 {
		k := i * 7 % 20
		jobs = append(jobs, priorityJob{id: fmt.Sprintf("j%02d", k), prio: prios[k%len(prios)], at: base.Add(time.Duration(k) * time.Millisecond)})
	}
	return jobs
}

// createPriorityJobs creates jobs in topic prio, through each of tis in
// turn.
func createPriorityJobs(t *testing.T, jobs []priorityJob, tis ...*testInstance) {
	t.Helper()
	for i, j := range jobs {
		body := fmt.Sprintf(`{"id": %q, "run_at": %q, "priority": %d}`, j.id, j.at.Format(time.RFC3339Nano), j.prio)
		tis[i%len(tis)].call(t, "POST", "/v1/topics/prio/jobs", body, http.StatusCreated)
	}
}

// priorityOrder is the ids of jobs but those in skip in the order the
// priority rule delivers them: higher priority first, equal priority by
// run_at.
func priorityOrder(jobs []priorityJob, skip ...string) []string {
	want := slices.DeleteFunc(slices.Clone(jobs), func(j priorityJob) bool { return slices.Contains(skip, j.id) })
	slices.SortFunc(want, func(a, b priorityJob) int {
		if a.prio != b.prio {
			return b.prio - a.prio
		}
		return a.at.Compare(b.at)
	})
	var ids []string
	for _, j := range want {
		ids = append(ids, j.id)
	}
	return ids
}
