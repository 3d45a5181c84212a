package callback

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// subsStore is an askRecorder with subscriptions: deliveries' gate and
// park logic without Redis. Gate answers each delivery by its
// subscription's gates entry (go when none).
type subsStore struct {
	*askRecorder
	subs  map[string]kairos.Subscription // by name; one absent is deleted
	gates map[string]kairos.GateResult   // by subscription: the flow's answer
	// onPark, if set, runs as ParkDelivery begins (a resume racing it)
	onPark func(sub string)

	parked  []string // ParkDelivery calls that parked, ids (under fakeStore.mu)
	refiled []string // RefileDelivery calls, ids
}

func newSubsStore(tp kairos.Topic, subs ...kairos.Subscription) (*flowClient, *subsStore) {
	st := &subsStore{askRecorder: &askRecorder{fakeStore: newFakeStore(tp)}, subs: map[string]kairos.Subscription{}, gates: map[string]kairos.GateResult{}}
	for _, s := range subs {
		s.Tenant, s.Topic = tp.Tenant, tp.Name
		st.subs[s.Name] = s
	}
	h := newHolder(st, holdConfig{})
	fc := newFlowClient(st, h, nil)
	fc.retry = time.Hour
	return fc, st
}

func (s *subsStore) Subscription(_ context.Context, _, topic, name string) (kairos.Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subs[name]
	if !ok {
		return kairos.Subscription{}, fmt.Errorf("subscription %q of %q: %w", name, topic, kairos.ErrNotFound)
	}
	return sub, nil
}

func (s *subsStore) setPaused(name string, paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.subs[name]
	sub.Paused = paused
	s.subs[name] = sub
}

// ParkDelivery parks as subpark.lua does: only while sub is paused.
func (s *subsStore) ParkDelivery(_ context.Context, _, _, sub, id string, _ time.Time) (bool, error) {
	if s.onPark != nil {
		s.onPark(sub)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.subs[sub].Paused {
		return false, nil
	}
	s.parked = append(s.parked, id)
	return true, nil
}

func (s *subsStore) RefileDelivery(_ context.Context, key kairos.JobKey, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refiled = append(s.refiled, key.ID)
	return nil
}

func (s *subsStore) Gate(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, order []time.Time, lease time.Duration) ([]kairos.GateResult, error) {
	s.record(flow, jobs, order)
	out := make([]kairos.GateResult, len(jobs))
	for i, j := range jobs {
		sub, _ := kairos.DeliveryOf(j)
		out[i] = s.gates[sub]
	}
	return out, nil
}

func (s *subsStore) parkedAndRefiled() (parked, refiled []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.parked), slices.Clone(s.refiled)
}

// delivery is message msg's delivery to sub, claimed due at due.
func delivery(tp kairos.Topic, msg, sub string, due time.Time) kairos.Claimed {
	c := claimed(tp, kairos.DeliveryID(msg, sub), due)
	c.Job.Labels = map[string]string{kairos.LabelSubscription: sub}
	c.Job.RunAt = due.Truncate(time.Millisecond)
	return c
}

// TestGateHoldsBackOnlyTheSubscriptionThatMustWait: of one topic's
// deliveries, those of a subscription whose flow is full or whose breaker
// is open wait, each asked about in its subscription's flow; the other
// subscriptions' deliveries and the topic's own jobs go.
func TestGateHoldsBackOnlyTheSubscriptionThatMustWait(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", CallbackURL: "https://example.com/own"}
	limited := func(name string) kairos.Subscription {
		return kairos.Subscription{Name: name, URL: "https://example.com/" + name, Parallelism: 10, BreakerFailures: 1, BreakerCooldown: time.Minute}
	}
	fc, st := newSubsStore(tp, limited("full"), limited("broken"), limited("fine"))
	st.gates["full"] = kairos.GateResult{Gate: kairos.GateFull}
	st.gates["broken"] = kairos.GateResult{Gate: kairos.GateWait, At: st.Now().Add(time.Minute)} // open until then
	now := st.Now()
	got := fc.gate(context.Background(), "t", "orders", []kairos.Claimed{
		delivery(tp, "m1", "full", now), delivery(tp, "m1", "broken", now), delivery(tp, "m1", "fine", now),
		claimed(tp, "own", now), delivery(tp, "m2", "fine", now)})
	ids := jobIDs(got)
	slices.Sort(ids)
	if want := []string{"m1.fine", "m2.fine", "own"}; !slices.Equal(ids, want) {
		t.Fatalf("let go %v, want %v", ids, want)
	}
	flows := map[string][]string{}
	for _, a := range st.asked() {
		flows[a.flow] = append(flows[a.flow], a.ids...)
	}
	for _, sub := range []string{"full", "broken", "fine"} {
		f := limited(sub).DeliveryTopic(tp).Flow()
		for _, id := range flows[f] {
			if d, _ := kairos.DeliveryOf(kairos.Job{JobKey: kairos.JobKey{ID: id}, Labels: map[string]string{kairos.LabelSubscription: sub}}); d != sub {
				t.Errorf("flow %s was asked about %s", f, id)
			}
		}
		if len(flows[f]) == 0 {
			t.Errorf("subscription %s's flow %s was not asked: %v", sub, f, flows)
		}
	}
	if r := st.releasedJobs(); len(r) != 1 || r[0].Job.ID != "m1.broken" {
		t.Errorf("given back to wait %v, want m1.broken (its breaker's cooldown)", r)
	}
}

// TestGateParksAPausedSubscriptionsDeliveries: a paused subscription's due
// deliveries are given back due kairos.ParkFor ahead and recorded parked;
// the other subscription's go.
func TestGateParksAPausedSubscriptionsDeliveries(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders"}
	fc, st := newSubsStore(tp, kairos.Subscription{Name: "paused", Paused: true}, kairos.Subscription{Name: "on"})
	now := st.Now()
	got := fc.gate(context.Background(), "t", "orders", []kairos.Claimed{delivery(tp, "m1", "paused", now), delivery(tp, "m1", "on", now)})
	if ids := jobIDs(got); !slices.Equal(ids, []string{"m1.on"}) {
		t.Fatalf("let go %v, want [m1.on]", ids)
	}
	r := st.releasedJobs()
	if len(r) != 1 || r[0].Job.ID != "m1.paused" || r[0].Due.Before(now.Add(kairos.ParkFor)) {
		t.Fatalf("given back %+v, want m1.paused due ParkFor ahead", r)
	}
	parked, refiled := st.parkedAndRefiled()
	if !slices.Equal(parked, []string{"m1.paused"}) || len(refiled) != 0 {
		t.Errorf("parked %v, refiled %v; want m1.paused parked", parked, refiled)
	}
}

// TestParkRacingAResumeFilesTheDeliveryAgain: a subscription resumed after
// the worker saw it paused, before its delivery is recorded parked, does
// not leave the delivery due ParkFor ahead: it is filed again at its
// run_at.
func TestParkRacingAResumeFilesTheDeliveryAgain(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders"}
	fc, st := newSubsStore(tp, kairos.Subscription{Name: "p", Paused: true})
	st.onPark = func(sub string) { st.setPaused(sub, false) } // resume lands between the release and the park
	got := fc.gate(context.Background(), "t", "orders", []kairos.Claimed{delivery(tp, "m1", "p", st.Now())})
	if len(got) != 0 {
		t.Fatalf("let go %v, want none (it was paused when asked)", jobIDs(got))
	}
	parked, refiled := st.parkedAndRefiled()
	if len(parked) != 0 || !slices.Equal(refiled, []string{"m1.p"}) {
		t.Errorf("parked %v, refiled %v; want m1.p filed again, not parked", parked, refiled)
	}
}

// TestDeletedSubscriptionsDeliveryEndsDeadWithoutARequest: a delivery
// whose subscription was deleted goes through the gate, then ends dead
// at once, and no request leaves, neither to the topic's own URL.
func TestDeletedSubscriptionsDeliveryEndsDeadWithoutARequest(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	tp := kairos.Topic{Tenant: "t", Name: "orders", CallbackURL: srv.URL}.WithDefaults()
	fc, st := newSubsStore(tp) // no subscriptions: "gone" was deleted
	if got := fc.gate(context.Background(), "t", "orders", []kairos.Claimed{delivery(tp, "m1", "gone", st.Now())}); len(got) != 1 {
		t.Fatalf("let go %v, want m1.gone (it ends as it fires)", jobIDs(got))
	}

	plain := newFakeStore(tp) // its Subscription answers not found
	plain.want = 1
	runWorker(t, plain)
	var ended sync.WaitGroup
	ended.Go(func() { testwait.Receive(t, testwait.Patience, plain.done, "the delivery's outcome") })
	c := delivery(tp, "m1", "gone", time.Now())
	c.Job.UID, c.Job.Method, c.Job.Payload = "u1", http.MethodPost, []byte(`{}`)
	plain.push(c.Job, c.Due)
	ended.Wait()
	if got := plain.outcomes(); len(got) != 1 || got[0] != kairos.OutcomeDead {
		t.Errorf("outcomes %v, want one dead", got)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests left for a deleted subscription's delivery", n)
	}
}
