package callback

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// idleTopicStore is a fakeStore with a second topic, "later", whose ready
// list exists (it has a handle) and stays empty, like a topic whose jobs
// are due in an hour. Its Pop takes at most perPop jobs, and with none to
// take it blocks as BLMPOP does through go-redis: for its timeout rounded
// up to whole seconds, or until Interrupt. A Start takes a round trip's
// time.
type idleTopicStore struct {
	*fakeStore
	later      kairos.Topic
	perPop     int
	interrupts chan struct{}
	pops       atomic.Int64
}

func newIdleTopicStore(t kairos.Topic, perPop int) *idleTopicStore {
	return &idleTopicStore{fakeStore: newFakeStore(t), perPop: perPop, interrupts: make(chan struct{}, 1),
		later: kairos.Topic{Tenant: t.Tenant, Name: "later", CallbackURL: t.CallbackURL}.WithDefaults()}
}

func (f *idleTopicStore) Topics(context.Context) ([]kairos.Topic, error) {
	return []kairos.Topic{f.topic, f.later}, nil
}

func (f *idleTopicStore) GetTopic(_ context.Context, _, name string) (kairos.Topic, error) {
	if name == f.later.Name {
		return f.later, nil
	}
	return f.topic, nil
}

func (f *idleTopicStore) Handles(_ context.Context, ts []kairos.Topic) ([]string, error) {
	hs := make([]string, len(ts))
	for i, t := range ts {
		hs[i] = "h:" + t.Name
	}
	return hs, nil
}

func (f *idleTopicStore) Interrupt(context.Context, []int) error {
	select {
	case f.interrupts <- struct{}{}:
	default:
	}
	return nil
}

func (f *idleTopicStore) Start(_ context.Context, cs []kairos.Claimed) ([]kairos.Claimed, error) {
	time.Sleep(2 * time.Millisecond) // a round trip, during which the next pops go on
	return cs, nil
}

func (f *idleTopicStore) Pop(ctx context.Context, _ []int, hs []string, n int, timeout time.Duration) ([]kairos.Claimed, error) {
	f.pops.Add(1)
	select {
	case <-f.interrupts: // a pop that begins after an interrupt ends at once, as on Redis
		return nil, nil
	default:
	}
	var out []kairos.Claimed
	if slices.Contains(hs, "h:"+f.topic.Name) {
	take:
		for len(out) < min(n, f.perPop) {
			select {
			case c := <-f.ready:
				out = append(out, c)
			default:
				break take
			}
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	t := time.NewTimer((timeout + time.Second - 1).Truncate(time.Second))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-f.interrupts:
	case <-t.C:
	}
	return nil, nil
}

// TestBusyTopicRefillsWithoutWaitingForAnotherTopicsPop: a topic whose due
// jobs fill its callback slots is left out of the blocking pop, which then
// waits on the other topics' empty lists; as soon as its jobs are taken it
// is popped again, without waiting for that pop's timeout. (A pop that
// waited a second on another topic's list each time drained bursts in
// waves: half a second of deliveries, then a second of none.)
func TestBusyTopicRefillsWithoutWaitingForAnotherTopicsPop(t *testing.T) {
	var delivered atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	const jobs, perPop = 400, 4
	st := newIdleTopicStore(kairos.Topic{Tenant: "t", Name: "burst", CallbackURL: srv.URL, Concurrency: 2}.WithDefaults(), perPop)
	st.want = jobs
	now := time.Now()
	for i := range jobs {
		id := "j" + strconv.Itoa(i)
		st.push(kairos.Job{JobKey: kairos.JobKey{Tenant: "t", Topic: "burst", ID: id}, UID: "u" + id, Attempts: 1, MaxAttempts: 3,
			Method: http.MethodPost, ContentType: "application/json", Payload: []byte(`{}`), RunAt: now}, now)
	}
	w := NewWorker(st, WorkerConfig{AllowPrivate: true, Grace: 5 * time.Second, Wait: 30 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// the pops take a few jobs ahead of the starts each time the topic
	// has room: waiting a second for another topic's pop each time takes
	// many seconds
	select {
	case <-st.done:
	case <-time.After(8 * time.Second):
		t.Fatalf("%d of %d jobs delivered within 8 s (%d pops): a busy topic's refill waited for another topic's pop", delivered.Load(), jobs, st.pops.Load())
	}
}
