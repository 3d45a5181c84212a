package callback

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// stepStore is a fakeStore whose pops the test answers one at a time: each
// Pop hands the test a popReq (the lists it covers, how many it may take)
// and blocks until the test replies, ctx ends, or Interrupt ends it (an
// interrupt with no pop under way ends the next one at once, as the
// interrupt list's entry does on Redis). Its topics are those of topics,
// each list named "h:<name>"; Start starts only the jobs startable says.
type stepStore struct {
	*fakeStore
	pops       chan popReq
	interrupts chan struct{}

	topics    []kairos.Topic    // under fakeStore.mu
	startable func(string) bool // by job id; nil starts every job
	phase     atomic.Int64      // the test's step, recorded with each pop
}

// popReq is one Pop under way, for the test to answer.
type popReq struct {
	hs    []string
	n     int
	phase int64
	reply chan popReply
}

type popReply struct {
	cs  []kairos.Claimed
	err error
}

func newStepStore(topics ...kairos.Topic) *stepStore {
	return &stepStore{fakeStore: newFakeStore(topics[0]), topics: topics,
		pops: make(chan popReq), interrupts: make(chan struct{}, 1)}
}

func (s *stepStore) Topics(context.Context) ([]kairos.Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.topics), nil
}

func (s *stepStore) Handles(_ context.Context, ts []kairos.Topic) ([]string, error) {
	hs := make([]string, len(ts))
	for i, t := range ts {
		hs[i] = "h:" + t.Name
	}
	return hs, nil
}

func (s *stepStore) Interrupt(context.Context, []int) error {
	select {
	case s.interrupts <- struct{}{}:
	default:
	}
	return nil
}

func (s *stepStore) Pop(ctx context.Context, _ []int, hs []string, n int, _ time.Duration) ([]kairos.Claimed, error) {
	req := popReq{hs: slices.Clone(hs), n: n, phase: s.phase.Load(), reply: make(chan popReply, 1)}
	select {
	case <-s.interrupts:
		return nil, nil
	default:
	}
	select {
	case s.pops <- req:
	case <-ctx.Done():
		return nil, nil
	}
	select {
	case r := <-req.reply:
		return r.cs, r.err
	case <-s.interrupts:
		return nil, nil
	case <-ctx.Done():
		return nil, nil
	}
}

func (s *stepStore) Start(_ context.Context, cs []kairos.Claimed) ([]kairos.Claimed, error) {
	if s.startable == nil {
		return cs, nil
	}
	var out []kairos.Claimed
	for _, c := range cs {
		if s.startable(c.Job.ID) {
			out = append(out, c)
		}
	}
	return out, nil
}

// setTopics makes w's pops cover topics, as a topic sync does.
func (s *stepStore) setTopics(w *Worker, topics ...kairos.Topic) {
	s.mu.Lock()
	s.topics = topics
	s.mu.Unlock()
	w.setLists(context.Background(), topics)
}

// nextPop waits for the pop loop's next pop.
func (s *stepStore) nextPop(t *testing.T) popReq {
	t.Helper()
	return receive(t, "a pop", s.pops)
}

// stepWorker returns a worker over st whose pop loop of shard 0 runs until
// the test ends.
func stepWorker(t *testing.T, st *stepStore) *Worker {
	w := NewWorker(st, WorkerConfig{Wait: 30 * time.Second})
	topics, _ := st.Topics(context.Background())
	w.setLists(context.Background(), topics)
	select {
	case <-st.interrupts: // the first setting of the lists; no pop is under way
	default:
	}
	popLoop(t, w)
	return w
}

func topicNamed(name string) kairos.Topic {
	return kairos.Topic{Tenant: "t", Name: name}.WithDefaults()
}

// TestPopTriesTheListsInTurn: each pop starts its lists at the next topic,
// so that no topic's list is always tried last.
func TestPopTriesTheListsInTurn(t *testing.T) {
	st := newStepStore(topicNamed("a"), topicNamed("b"), topicNamed("c"))
	stepWorker(t, st)
	var got [][]string
	for range 4 {
		p := st.nextPop(t)
		got = append(got, p.hs)
		p.reply <- popReply{}
	}
	want := [][]string{{"h:a", "h:b", "h:c"}, {"h:b", "h:c", "h:a"}, {"h:c", "h:a", "h:b"}, {"h:a", "h:b", "h:c"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("pops covered %v, want %v", got, want)
	}
}

// TestPopCoversTopicsAsTheyComeAndGo: a topic added is covered by a pop at
// once (the pop under way, blocked on the other lists, is interrupted), and
// a topic removed is covered no more.
func TestPopCoversTopicsAsTheyComeAndGo(t *testing.T) {
	a, b := topicNamed("a"), topicNamed("b")
	st := newStepStore(a)
	w := stepWorker(t, st)
	if p := st.nextPop(t); !slices.Equal(p.hs, []string{"h:a"}) {
		t.Fatalf("first pop covered %v, want [h:a]", p.hs)
	}
	// that pop stays blocked: only the interrupt ends it
	st.setTopics(w, a, b)
	if p := st.nextPop(t); !slices.Contains(p.hs, "h:b") || len(p.hs) != 2 {
		t.Fatalf("pop after b was added covered %v, want a's and b's lists", p.hs)
	}
	st.setTopics(w, b)
	if p := st.nextPop(t); !slices.Equal(p.hs, []string{"h:b"}) {
		t.Fatalf("pop after a was removed covered %v, want [h:b]", p.hs)
	}
}

// TestPopBacksOffAfterFailedPops: after a failed pop the loop waits before
// it pops again, twice as long after each failure in a row (from 100 ms),
// so that a Redis that is away is not asked in a tight loop. Only the
// least each wait must be is checked: a loaded machine makes them longer.
func TestPopBacksOffAfterFailedPops(t *testing.T) {
	st := newStepStore(topicNamed("a"))
	stepWorker(t, st)
	p := st.nextPop(t)
	for _, least := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		failed := time.Now()
		p.reply <- popReply{err: errors.New("redis away")}
		p = st.nextPop(t)
		if waited := time.Since(failed); waited < least {
			t.Errorf("popped again %v after a failure, want at least %v", waited, least)
		}
	}
}

// TestPopHoldsOnlyWhatItStarted: of the jobs a pop took, those the start
// did not start (popped twice, or their pop lease lapsed) are not held: a
// job fires only once started.
func TestPopHoldsOnlyWhatItStarted(t *testing.T) {
	a := topicNamed("a")
	st := newStepStore(a)
	st.startable = func(id string) bool { return id != "gone" }
	w := stepWorker(t, st)
	p := st.nextPop(t)
	p.reply <- popReply{cs: []kairos.Claimed{claimed(a, "started", st.Now()), claimed(a, "gone", st.Now())}}
	st.nextPop(t) // the loop went on: the start runs beside it
	waitFor(t, "the started job held", func() bool { return w.hold.waiting("t", "a") == 1 })
	if got := ids(w.hold.take(context.Background(), "t", "a", 10)); !slices.Equal(got, []string{"started"}) {
		t.Errorf("held %v, want [started]", got)
	}
	if n := w.hold.capacity(); n != 5000 {
		t.Errorf("capacity %d after the take, want 5000: a job not started was counted", n)
	}
}

// TestPopLeavesEveryBusyTopicOut: when every topic's due jobs fill its
// callback slots the loop pops nothing, and pops the topic again as soon
// as a take leaves it room.
func TestPopLeavesEveryBusyTopicOut(t *testing.T) {
	a := kairos.Topic{Tenant: "t", Name: "a", Concurrency: 1}.WithDefaults()
	st := newStepStore(a)
	w := NewWorker(st, WorkerConfig{Wait: 30 * time.Second})
	w.setLists(context.Background(), []kairos.Topic{a})
	ctx := context.Background()
	w.hold.add(ctx, []kairos.Claimed{claimed(a, "waiting", st.Now())})
	popLoop(t, w)
	// the loop has looked at a and found it busy (busy marks the queue)
	waitFor(t, "the loop to find a busy", func() bool {
		w.hold.mu.Lock()
		defer w.hold.mu.Unlock()
		return w.hold.topics["t/a"].low == 1
	})
	st.phase.Store(1)
	w.hold.take(ctx, "t", "a", 1)
	p := st.nextPop(t)
	if p.phase != 1 || !slices.Equal(p.hs, []string{"h:a"}) {
		t.Errorf("popped %v in phase %d, want [h:a] once the take left a room (phase 1)", p.hs, p.phase)
	}
}
