package callback

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// askRecorder is a fakeStore that records what flow control is asked: each
// Gate and Pace call's flow, jobs and order, and each topic lookup; paceErr
// and topicErr make those calls fail.
type askRecorder struct {
	*fakeStore
	paceErr  error
	topicErr error
	asks     []ask // under fakeStore.mu
	lookups  int
}

// ask is one Gate or Pace call.
type ask struct {
	flow  string
	ids   []string
	order []time.Time
}

func newAskRecorder(tp kairos.Topic) (*flowClient, *holder, *askRecorder) {
	st := &askRecorder{fakeStore: newFakeStore(tp)}
	h := newHolder(st, holdConfig{})
	fc := newFlowClient(st, h, nil)
	fc.retry = time.Hour
	return fc, h, st
}

func (r *askRecorder) record(flow string, jobs []kairos.Job, order []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asks = append(r.asks, ask{flow: flow, ids: jobIDs(jobs), order: slices.Clone(order)})
}

func (r *askRecorder) asked() []ask {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.asks)
}

func (r *askRecorder) GetTopic(ctx context.Context, tenant, name string) (kairos.Topic, error) {
	r.mu.Lock()
	r.lookups++
	r.mu.Unlock()
	if r.topicErr != nil {
		return kairos.Topic{}, r.topicErr
	}
	return r.fakeStore.GetTopic(ctx, tenant, name)
}

func (r *askRecorder) Gate(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, order []time.Time, lease time.Duration) ([]kairos.GateResult, error) {
	r.record(flow, jobs, order)
	return r.fakeStore.Gate(ctx, t, flow, jobs, order, lease)
}

func (r *askRecorder) Pace(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, dues, order []time.Time, hold time.Duration) ([]kairos.GateResult, error) {
	r.record(flow, jobs, order)
	if r.paceErr != nil {
		return nil, r.paceErr
	}
	return r.fakeStore.Pace(ctx, t, flow, jobs, dues, order, hold)
}

// withFlowKey returns c with its own flow key.
func withFlowKey(c kairos.Claimed, key string) kairos.Claimed {
	c.Job.FlowKey = key
	return c
}

// TestGateAsksEachFlowOnItsOwn: jobs of one topic with flow keys of their
// own are asked about in one call a flow, and a flow whose permits were all
// taken waits without asking while the topic's other flows still ask.
func TestGateAsksEachFlowOnItsOwn(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", Parallelism: 1}
	fc, _, st := newAskRecorder(tp)
	st.gate = gateBy(time.Time{})
	ctx := context.Background()
	now := st.Now()
	got := fc.gate(ctx, "t", "orders", []kairos.Claimed{
		withFlowKey(claimed(tp, "full", now), "x"), withFlowKey(claimed(tp, "y1", now), "y"), claimed(tp, "topic1", now)})
	if !slices.Equal(jobIDs(got), []string{"y1", "topic1"}) {
		t.Fatalf("let go %v, want [y1 topic1]", jobIDs(got))
	}
	var flows []string
	for _, a := range st.asked() {
		flows = append(flows, a.flow)
	}
	if !slices.Equal(flows, []string{"key:x", "key:y", "topic:orders"}) {
		t.Errorf("asked flows %v, want one call each of key:x, key:y, topic:orders", flows)
	}
	before := len(st.asked())
	got = fc.gate(ctx, "t", "orders", []kairos.Claimed{withFlowKey(claimed(tp, "x2", now), "x"), withFlowKey(claimed(tp, "y2", now), "y")})
	if !slices.Equal(jobIDs(got), []string{"y2"}) {
		t.Errorf("let go %v, want [y2]: x waits for a permit, y has its own", jobIDs(got))
	}
	if asks := st.asked()[before:]; len(asks) != 1 || asks[0].flow != "key:y" {
		t.Errorf("then asked %+v, want key:y alone (key:x waits without asking)", asks)
	}
}

// TestGateGivesFlowControlTheWaitOrder: each job is asked about with its
// wait order (due time less its priority's steps; its run_at when claimed
// late), and a paced job whose time passed asks first in line.
func TestGateGivesFlowControlTheWaitOrder(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", RateLimit: 10, RatePeriod: time.Second}
	fc, _, st := newAskRecorder(tp)
	ctx := context.Background()
	now := st.Now()
	urgent := claimed(tp, "urgent", now)
	urgent.Job.Priority = 2
	late := claimed(tp, "late", now)
	late.Job.RunAt = now.Add(-time.Minute) // claimed a minute after its run_at
	paced := claimed(tp, "paced", now.Add(-time.Second))
	paced.Paced = true // its paced time passed while the process was slow
	fc.gate(ctx, "t", "orders", []kairos.Claimed{claimed(tp, "plain", now), urgent, late, paced})
	asks := st.asked()
	if len(asks) != 1 {
		t.Fatalf("%d gate calls, want 1", len(asks))
	}
	want := []time.Time{now, now.Add(-2 * kairos.PriorityStep), now.Add(-time.Minute), firstInLine}
	if !slices.Equal(asks[0].ids, []string{"plain", "urgent", "late", "paced"}) || !slices.EqualFunc(asks[0].order, want, time.Time.Equal) {
		t.Errorf("asked %v with order %v, want %v", asks[0].ids, asks[0].order, want)
	}
}

// TestGateLetsJobsOfUnlimitedTopicsGoWithoutAsking: a topic with no flow
// limit, or one that cannot be read (a job with its own URL), asks nothing.
func TestGateLetsJobsOfUnlimitedTopicsGoWithoutAsking(t *testing.T) {
	for _, tc := range []struct {
		name     string
		topicErr error
	}{{name: "unlimited"}, {name: "unknown", topicErr: kairos.ErrNotFound}} {
		t.Run(tc.name, func(t *testing.T) {
			tp := kairos.Topic{Tenant: "t", Name: "orders"}
			fc, _, st := newAskRecorder(tp)
			st.topicErr = tc.topicErr
			st.gate = gateBy(time.Time{})
			got := fc.gate(context.Background(), "t", "orders", []kairos.Claimed{claimed(tp, "full", st.Now())})
			if len(got) != 1 || len(st.asked()) != 0 {
				t.Errorf("let %v go after %d gate calls, want the job with none", jobIDs(got), len(st.asked()))
			}
		})
	}
}

// TestPaceAsksInWaitOrderAndLooksTopicsUpOnce: a pop's jobs of one flow are
// paced in one call, oldest due first, or in wait order once a job of
// priority is among them, so that those take the earlier times; the topic
// is looked up once for the whole pop.
func TestPaceAsksInWaitOrderAndLooksTopicsUpOnce(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", RateLimit: 10, RatePeriod: time.Second}
	fc, _, st := newAskRecorder(tp)
	now := st.Now()
	ctx := context.Background()
	fc.pace(ctx, []kairos.Claimed{claimed(tp, "b", now.Add(2*time.Millisecond)), claimed(tp, "a", now), claimed(tp, "c", now.Add(3*time.Millisecond))})
	urgent := claimed(tp, "urgent", now.Add(3*time.Millisecond))
	urgent.Job.Priority = 1
	fc.pace(ctx, []kairos.Claimed{claimed(tp, "d", now), urgent})
	asks := st.asked()
	if len(asks) != 2 {
		t.Fatalf("%d Pace calls, want one a pop", len(asks))
	}
	if !slices.Equal(asks[0].ids, []string{"a", "b", "c"}) {
		t.Errorf("paced %v, want due order [a b c]", asks[0].ids)
	}
	if !slices.Equal(asks[1].ids, []string{"urgent", "d"}) {
		t.Errorf("paced %v, want wait order [urgent d]", asks[1].ids)
	}
	if st.lookups != 2 {
		t.Errorf("%d topic lookups for 2 pops of one topic, want 2", st.lookups)
	}
}

// TestPaceKeepsJobsAsTheyAreWhenItCannotAsk: when the rate cannot be
// asked (Redis away) or the topic read, the pop's jobs are held as they
// came, not paced, none given back: each asks the gate when due.
func TestPaceKeepsJobsAsTheyAreWhenItCannotAsk(t *testing.T) {
	for _, tc := range []struct {
		name              string
		paceErr, topicErr error
	}{{name: "pace fails", paceErr: errors.New("redis away")}, {name: "topic unread", topicErr: errors.New("redis away")}} {
		t.Run(tc.name, func(t *testing.T) {
			tp := kairos.Topic{Tenant: "t", Name: "orders", RateLimit: 10, RatePeriod: time.Second}
			fc, _, st := newAskRecorder(tp)
			st.paceErr, st.topicErr = tc.paceErr, tc.topicErr
			now := st.Now()
			got := fc.pace(context.Background(), []kairos.Claimed{claimed(tp, "a", now), claimed(tp, "b", now)})
			if !slices.Equal(ids(got), []string{"a", "b"}) || got[0].Paced || got[1].Paced || !got[0].Due.Equal(now) {
				t.Errorf("kept %v (paced %v %v), want both as they came", ids(got), got[0].Paced, got[1].Paced)
			}
			if n := len(st.releasedJobs()); n != 0 {
				t.Errorf("%d released, want none", n)
			}
		})
	}
}

// TestWaitFullWithTheHolderClosedReleasesAndForgets: jobs refused a permit
// after the holder closed go back to Redis, and their flow is not left
// waiting on jobs no longer held.
func TestWaitFullWithTheHolderClosedReleasesAndForgets(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", Parallelism: 1}
	fc, h, st := newFlow(tp)
	h.close(context.Background())
	f := flowKey("t", tp.Flow())
	fc.waitFull(f, []kairos.Claimed{claimed(tp, "a", st.Now())})
	if got := ids(st.releasedJobs()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("released %v, want [a]", got)
	}
	if fc.waitsFull(f, time.Now()) {
		t.Error("the flow waits for a permit with no job held")
	}
}
