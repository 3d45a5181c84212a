package callback

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
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
// time. It records each pop (popCalls).
type idleTopicStore struct {
	*fakeStore
	later      kairos.Topic
	perPop     int
	interrupts chan struct{}
	pops       atomic.Int64

	hidden      atomic.Bool  // Handles answers "" for every topic: none had a job yet
	failPops    atomic.Int64 // how many pops fail before they pop
	blocked     atomic.Int64 // pops blocking now
	interrupted atomic.Int64 // Interrupt calls
	phase       atomic.Int64 // the test's step, recorded with each pop
	calls       []popCall    // under fakeStore.mu
}

// popCall is one Pop: the lists it covered, how many jobs it could take,
// and the test's phase when it began.
type popCall struct {
	hs    []string
	n     int
	phase int64
}

// popCalls returns the pops so far.
func (f *idleTopicStore) popCalls() []popCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
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
		if !f.hidden.Load() {
			hs[i] = "h:" + t.Name
		}
	}
	return hs, nil
}

func (f *idleTopicStore) Interrupt(context.Context, []int) error {
	f.interrupted.Add(1)
	select {
	case f.interrupts <- struct{}{}:
	default:
	}
	return nil
}

func (f *idleTopicStore) Start(_ context.Context, cs []kairos.Claimed) ([]kairos.Claimed, error) {
	time.Sleep(2 * time.Millisecond) // the point: a round trip's time, during which the next pops go on
	return cs, nil
}

func (f *idleTopicStore) Pop(ctx context.Context, _ []int, hs []string, n int, timeout time.Duration) ([]kairos.Claimed, error) {
	f.pops.Add(1)
	f.mu.Lock()
	f.calls = append(f.calls, popCall{hs: slices.Clone(hs), n: n, phase: f.phase.Load()})
	f.mu.Unlock()
	if f.failPops.Add(-1) >= 0 {
		return nil, errors.New("redis away")
	}
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
	f.blocked.Add(1)
	defer f.blocked.Add(-1)
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

// popLoop runs w's pop loop of shard 0 until the test ends.
func popLoop(t *testing.T, w *Worker) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.pop(ctx, []int{0}) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// newPopWorker returns a worker over st that pops the lists of st's
// topics, not running: the test runs its pop loop (popLoop).
func newPopWorker(t *testing.T, st *idleTopicStore) *Worker {
	w := NewWorker(st, WorkerConfig{Wait: 30 * time.Second})
	topics, _ := st.Topics(context.Background())
	w.setLists(context.Background(), topics)
	select {
	case <-st.interrupts: // the lists' first setting interrupts no pop here
	default:
	}
	return w
}

// TestPopLeavesABusyTopicOutUntilItsJobsAreTaken: a topic whose due jobs
// fill its callback slots is left out of the pops, and the pop under way
// is interrupted as soon as a take leaves it room, so that the next pop
// covers it again without waiting for the blocking pop's timeout.
func TestPopLeavesABusyTopicOutUntilItsJobsAreTaken(t *testing.T) {
	burst := kairos.Topic{Tenant: "t", Name: "burst", Concurrency: 2}.WithDefaults()
	st := newIdleTopicStore(burst, 100)
	w := newPopWorker(t, st)
	ctx := context.Background()
	w.hold.add(ctx, []kairos.Claimed{claimed(burst, "a", st.Now()), claimed(burst, "b", st.Now())})
	popLoop(t, w)
	waitFor(t, "a blocking pop", func() bool { return st.blocked.Load() == 1 })
	for _, c := range st.popCalls() {
		if !slices.Equal(c.hs, []string{"h:later"}) {
			t.Fatalf("popped %v while burst's jobs filled its slots, want [h:later]", c.hs)
		}
	}
	st.phase.Store(1)
	before := st.interrupted.Load()
	w.hold.take(ctx, "t", "burst", 1)
	waitFor(t, "a pop of burst's list after the take, before the 30 s pop ended", func() bool {
		calls := st.popCalls()
		last := calls[len(calls)-1]
		return last.phase == 1 && slices.Contains(last.hs, "h:burst")
	})
	if n := st.interrupted.Load() - before; n != 1 {
		t.Errorf("%d interrupts, want the one for burst's refill", n)
	}
}

// TestPopIdlesWithoutListsAndHoldsWhatItPops: a worker whose topics have
// no ready list yet pops nothing; once a topic has one, its pop loop pops
// it, and what it pops is started and held.
func TestPopIdlesWithoutListsAndHoldsWhatItPops(t *testing.T) {
	orders := kairos.Topic{Tenant: "t", Name: "orders"}.WithDefaults()
	st := newIdleTopicStore(orders, 100)
	st.hidden.Store(true)
	w := newPopWorker(t, st)
	popLoop(t, w)
	st.push(claimed(orders, "a", st.Now()).Job, st.Now())
	st.phase.Store(1)
	st.hidden.Store(false)
	topics, _ := st.Topics(context.Background())
	w.setLists(context.Background(), topics)
	waitFor(t, "the job popped and held", func() bool { return w.hold.waiting("t", "orders") == 1 })
	for _, c := range st.popCalls() {
		if c.phase == 0 {
			t.Errorf("popped %v before any topic had a list", c.hs)
		}
	}
}

// TestPopWaitsForRoom: with the holder full the pop loop pops nothing;
// when room frees it pops no more than the room.
func TestPopWaitsForRoom(t *testing.T) {
	orders := kairos.Topic{Tenant: "t", Name: "orders"}.WithDefaults()
	st := newIdleTopicStore(orders, 100)
	w := newPopWorker(t, st)
	w.hold = newHolder(st, holdConfig{MaxHeld: 1})
	w.flow = newFlowClient(st, w.hold, nil)
	ctx := context.Background()
	w.hold.add(ctx, []kairos.Claimed{claimed(orders, "held", st.Now())})
	popLoop(t, w)
	st.phase.Store(1)
	w.hold.take(ctx, "t", "orders", 1)
	waitFor(t, "a pop once room freed", func() bool { return len(st.popCalls()) > 0 })
	for _, c := range st.popCalls() {
		if c.phase == 0 || c.n != 1 {
			t.Errorf("pop of up to %d jobs in phase %d, want of 1 once room freed", c.n, c.phase)
		}
	}
}

// TestPopInterruptsWhenTheListsChange: setting the lists interrupts the
// pops under way when the set of lists changed, and only then.
func TestPopInterruptsWhenTheListsChange(t *testing.T) {
	st := newIdleTopicStore(kairos.Topic{Tenant: "t", Name: "orders"}.WithDefaults(), 100)
	w := newPopWorker(t, st)
	ctx := context.Background()
	before := st.interrupted.Load()
	topics, _ := st.Topics(ctx)
	w.setLists(ctx, topics)
	if n := st.interrupted.Load() - before; n != 0 {
		t.Errorf("%d interrupts for the same lists, want none", n)
	}
	w.setLists(ctx, topics[:1])
	if n := st.interrupted.Load() - before; n != 1 {
		t.Errorf("%d interrupts for a list gone, want 1", n)
	}
}

// TestPopTriesAgainAfterAFailedPop: a pop that fails is tried again.
func TestPopTriesAgainAfterAFailedPop(t *testing.T) {
	st := newIdleTopicStore(kairos.Topic{Tenant: "t", Name: "orders"}.WithDefaults(), 100)
	st.failPops.Store(2)
	w := newPopWorker(t, st)
	popLoop(t, w)
	waitFor(t, "a pop blocking after two failed", func() bool { return st.blocked.Load() == 1 })
	if n := len(st.popCalls()); n != 3 {
		t.Errorf("%d pops, want 3", n)
	}
}
