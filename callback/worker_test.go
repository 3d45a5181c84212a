package callback

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// runWorker runs a Worker over st until the test ends; stop ends it early
// and waits.
func runWorker(t *testing.T, st Store) (stop func()) {
	t.Helper()
	w := NewWorker(st, WorkerConfig{AllowPrivate: true, Grace: 5 * time.Second, Wait: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(ctx) })
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// TestWorkerHoldsJobsUntilDue: a job popped ahead of its due time reaches
// the receiver no earlier than that time, and its outcome is recorded.
func TestWorkerHoldsJobsUntilDue(t *testing.T) {
	arrived := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- time.Now()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	st := newFakeStore(kairos.Topic{Tenant: "t", Name: "orders", CallbackURL: srv.URL}.WithDefaults())
	st.want = 1
	runWorker(t, st)
	due := time.Now().Add(300 * time.Millisecond)
	st.push(kairos.Job{JobKey: kairos.JobKey{Tenant: "t", Topic: "orders", ID: "a"}, UID: "ua", Attempts: 1, MaxAttempts: 3,
		Method: http.MethodPost, ContentType: "application/json", Payload: []byte(`{}`), RunAt: due}, due)
	if at := receive(t, "the callback", arrived); at.Before(due) {
		t.Errorf("the callback arrived %v before its due time", due.Sub(at))
	}
	receive(t, "its outcome recorded", st.done)
	if got := st.outcomes(); len(got) != 1 || got[0] != kairos.OutcomeDelivered {
		t.Errorf("outcomes %v, want one delivered", got)
	}
}

// TestWorkerGivesBackHeldJobsAtShutdown: a job popped and held for its
// due time goes back to the store when the worker stops, unfired.
func TestWorkerGivesBackHeldJobsAtShutdown(t *testing.T) {
	st := newFakeStore(kairos.Topic{Tenant: "t", Name: "orders", CallbackURL: "http://127.0.0.1:1"}.WithDefaults())
	stop := runWorker(t, st)
	due := time.Now().Add(time.Hour)
	st.push(kairos.Job{JobKey: kairos.JobKey{Tenant: "t", Topic: "orders", ID: "later"}, Attempts: 1, MaxAttempts: 3, RunAt: due}, due)
	waitFor(t, "the job popped", func() bool { return len(st.ready) == 0 })
	stop()
	if released := st.releasedJobs(); len(released) != 1 || released[0].Job.ID != "later" {
		t.Errorf("released %v at shutdown, want the held job", released)
	}
	if got := st.outcomes(); len(got) != 0 {
		t.Errorf("%d outcomes recorded for a job not due", len(got))
	}
}

// TestFlowGateGivesBackWhatMustWait: a job that flow control gives a later
// time is given back to the store with that time, unfired; one it lets go
// is fired.
func TestFlowGateGivesBackWhatMustWait(t *testing.T) {
	arrived := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.Header.Get("Kairos-Job-Id")
	}))
	defer srv.Close()
	st := newFakeStore(kairos.Topic{Tenant: "t", Name: "orders", CallbackURL: srv.URL, Parallelism: 1}.WithDefaults())
	later := time.Now().Add(time.Hour)
	st.gate = func(jobs []kairos.Job) ([]kairos.GateResult, error) {
		out := make([]kairos.GateResult, len(jobs))
		for i, j := range jobs {
			if j.ID == "wait" {
				out[i] = kairos.GateResult{Gate: kairos.GateWait, At: later}
			}
		}
		return out, nil
	}
	st.want = 1
	runWorker(t, st)
	now := time.Now()
	for _, id := range []string{"wait", "go"} {
		st.push(kairos.Job{JobKey: kairos.JobKey{Tenant: "t", Topic: "orders", ID: id}, UID: "u" + id, Attempts: 1, MaxAttempts: 3,
			Method: http.MethodPost, ContentType: "application/json", Payload: []byte(`{}`), RunAt: now}, now)
	}
	if id := receive(t, "a callback", arrived); id != "go" {
		t.Fatalf("fired %s, want only the job flow control let go", id)
	}
	receive(t, "its outcome recorded", st.done)
	waitFor(t, "the job that must wait released", func() bool { return len(st.releasedJobs()) > 0 })
	if released := st.releasedJobs(); len(released) != 1 || released[0].Job.ID != "wait" || !released[0].Due.Equal(later) {
		t.Errorf("released %v, want wait alone, due %v", released, later)
	}
	select {
	case id := <-arrived:
		t.Errorf("%s fired too", id)
	default:
	}
}

// TestWorkerRecordsHugeHeadersAsAFailure: a receiver that answers 200 with
// headers past the cap has not delivered the job: the attempt is recorded
// as retrying, with the error that says why.
func TestWorkerRecordsHugeHeadersAsAFailure(t *testing.T) {
	srv := httptest.NewServer(hugeHeaders(1 << 20))
	defer srv.Close()
	st := newFakeStore(kairos.Topic{Tenant: "t", Name: "orders", CallbackURL: srv.URL}.WithDefaults())
	st.want = 1
	runWorker(t, st)
	now := time.Now()
	st.push(kairos.Job{JobKey: kairos.JobKey{Tenant: "t", Topic: "orders", ID: "a"}, UID: "ua", Attempts: 1, MaxAttempts: 3,
		Method: http.MethodPost, ContentType: "application/json", Payload: []byte(`{}`), RunAt: now}, now)
	receive(t, "the outcome", st.done)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished[0] != kairos.OutcomeRetrying || st.attempts[0].Status != 0 || !strings.Contains(st.attempts[0].Error, "headers exceed 64 KiB") {
		t.Errorf("outcome %v, attempt %+v; want retrying with an error naming the 64 KiB cap", st.finished[0], st.attempts[0])
	}
}
