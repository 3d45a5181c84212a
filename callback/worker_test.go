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
	"github.com/kairos-sh/kairos/internal/rdb"
)

// fakeStore is a Store of one topic and one shard whose ready list is a
// channel: delivery's logic without Redis (internal/rdb and e2e test the
// real one). Flow control lets every job go.
type fakeStore struct {
	topic kairos.Topic
	ready chan rdb.Claimed
	want  int64         // outcomes after which done closes (0: never)
	done  chan struct{} // closed when want outcomes are recorded

	// gate, if set, answers Gate (flow control); nil lets every job go.
	gate func(jobs []kairos.Job) []rdb.GateResult

	mu       sync.Mutex
	finished []kairos.Outcome
	attempts []kairos.Attempt // of each outcome, in the same order
	released []rdb.Claimed
}

func newFakeStore(t kairos.Topic) *fakeStore {
	return &fakeStore{topic: t, ready: make(chan rdb.Claimed, 1024), done: make(chan struct{})}
}

// push puts job on the ready list, due at due.
func (f *fakeStore) push(j kairos.Job, due time.Time) { f.ready <- rdb.Claimed{Job: j, Due: due} }

func (f *fakeStore) outcomes() []kairos.Outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]kairos.Outcome(nil), f.finished...)
}

func (f *fakeStore) Now() time.Time              { return time.Now() }
func (f *fakeStore) Local(t time.Time) time.Time { return t }
func (f *fakeStore) PopGroups() [][]int          { return [][]int{{0}} }
func (f *fakeStore) Topics(context.Context) ([]kairos.Topic, error) {
	return []kairos.Topic{f.topic}, nil
}
func (f *fakeStore) GetTopic(context.Context, string, string) (kairos.Topic, error) {
	return f.topic, nil
}
func (f *fakeStore) Handles(_ context.Context, ts []kairos.Topic) ([]string, error) {
	return []string{"h"}[:len(ts)], nil
}
func (f *fakeStore) Interrupt(context.Context, []int) error { return nil }
func (f *fakeStore) SigningSecret(context.Context, string, string) (string, error) {
	return testSecret, nil
}

func (f *fakeStore) Pop(ctx context.Context, _ []int, _ []string, n int, timeout time.Duration) ([]rdb.Claimed, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	var out []rdb.Claimed
	select {
	case c := <-f.ready:
		out = append(out, c)
	case <-ctx.Done():
		return nil, nil
	case <-t.C:
		return nil, nil
	}
	for len(out) < n {
		select {
		case c := <-f.ready:
			out = append(out, c)
		default:
			return out, nil
		}
	}
	return out, nil
}

func (f *fakeStore) Start(_ context.Context, cs []rdb.Claimed) ([]rdb.Claimed, error) { return cs, nil }

func (f *fakeStore) Release(_ context.Context, cs []rdb.Claimed) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, cs...)
	return nil
}

func (f *fakeStore) Pace(_ context.Context, _ kairos.Topic, _ string, jobs []kairos.Job, dues, _ []time.Time, _ time.Duration) ([]rdb.GateResult, error) {
	out := make([]rdb.GateResult, len(jobs))
	for i := range out {
		out[i].At = dues[i]
	}
	return out, nil
}

func (f *fakeStore) Gate(_ context.Context, _ kairos.Topic, _ string, jobs []kairos.Job, _ []time.Time, _ time.Duration) ([]rdb.GateResult, error) {
	if f.gate != nil {
		return f.gate(jobs), nil
	}
	return make([]rdb.GateResult, len(jobs)), nil
}
func (f *fakeStore) Done(context.Context, kairos.Topic, kairos.Job) error { return nil }
func (f *fakeStore) Outcome(context.Context, kairos.Topic, kairos.Job, bool) (kairos.Breaker, error) {
	return kairos.Breaker{State: "closed"}, nil
}

func (f *fakeStore) Finish(_ context.Context, _ kairos.JobKey, a kairos.Attempt, o kairos.Outcome, _ time.Time, _ ...kairos.Notice) (kairos.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished = append(f.finished, o)
	f.attempts = append(f.attempts, a)
	if int64(len(f.finished)) == f.want {
		close(f.done)
	}
	return o.State(), nil
}

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
	select {
	case at := <-arrived:
		if at.Before(due) {
			t.Errorf("the callback arrived %v before its due time", due.Sub(at))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no callback within 10 s")
	}
	select {
	case <-st.done:
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome recorded within 10 s")
	}
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
	deadline := time.Now().Add(10 * time.Second)
	for len(st.ready) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.released) != 1 || st.released[0].Job.ID != "later" {
		t.Errorf("released %v at shutdown, want the held job", st.released)
	}
	if len(st.finished) != 0 {
		t.Errorf("%d outcomes recorded for a job not due", len(st.finished))
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
	st.gate = func(jobs []kairos.Job) []rdb.GateResult {
		out := make([]rdb.GateResult, len(jobs))
		for i, j := range jobs {
			if j.ID == "wait" {
				out[i] = rdb.GateResult{Gate: rdb.GateWait, At: later}
			}
		}
		return out
	}
	st.want = 1
	runWorker(t, st)
	now := time.Now()
	for _, id := range []string{"wait", "go"} {
		st.push(kairos.Job{JobKey: kairos.JobKey{Tenant: "t", Topic: "orders", ID: id}, UID: "u" + id, Attempts: 1, MaxAttempts: 3,
			Method: http.MethodPost, ContentType: "application/json", Payload: []byte(`{}`), RunAt: now}, now)
	}
	select {
	case id := <-arrived:
		if id != "go" {
			t.Fatalf("fired %s, want only the job flow control let go", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no callback within 10 s")
	}
	<-st.done
	deadline := time.Now().Add(10 * time.Second)
	for {
		st.mu.Lock()
		released := append([]rdb.Claimed(nil), st.released...)
		st.mu.Unlock()
		if len(released) == 1 {
			if released[0].Job.ID != "wait" || !released[0].Due.Equal(later) {
				t.Errorf("released %s due %v, want wait due %v", released[0].Job.ID, released[0].Due, later)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("released %d jobs, want the one that must wait", len(released))
		}
		time.Sleep(10 * time.Millisecond)
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
	select {
	case <-st.done:
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome recorded within 10 s")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished[0] != kairos.OutcomeRetrying || st.attempts[0].Status != 0 || !strings.Contains(st.attempts[0].Error, "headers exceed 64 KiB") {
		t.Errorf("outcome %v, attempt %+v; want retrying with an error naming the 64 KiB cap", st.finished[0], st.attempts[0])
	}
}
