package rdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

func secretGen() func() (string, error) {
	n := 0
	return func() (string, error) { n++; return fmt.Sprintf("whsec_test%d", n), nil }
}

func sub(name string) kairos.Subscription {
	return kairos.Subscription{Tenant: "acme", Topic: "orders", Name: name, URL: "https://example.com/hooks/" + name,
		EventTypes: []string{"order.created"}, Filter: json.RawMessage(`{"data.total":{"$gte":100}}`),
		Headers: map[string]string{"X-Team": "billing"}, MaxAttempts: 3, RateLimit: 5, RatePeriod: time.Second,
		BreakerFailures: 2, BreakerCooldown: 10 * time.Second, Description: "billing's endpoint"}
}

func TestSubscriptionPutGetListDelete(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, Options{NewSecret: secretGen()})
	want := sub("billing")
	got, created, err := s.PutSubscription(ctx, want, nil)
	if err != nil || !created {
		t.Fatalf("put: created %v, %v", created, err)
	}
	if _, err := s.GetTopic(ctx, "acme", "orders"); err != nil {
		t.Fatalf("the topic is registered with its first subscription: %v", err)
	}
	want.CreatedAt, want.UpdatedAt = got.CreatedAt, got.UpdatedAt
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("put answered (-want +got):\n%s", d)
	}
	read, err := s.GetSubscription(ctx, "acme", "orders", "billing")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, read); d != "" {
		t.Errorf("get (-want +got):\n%s", d)
	}
	if _, created, err := s.PutSubscription(ctx, sub("billing"), nil); err != nil || created {
		t.Fatalf("second put: created %v, %v", created, err)
	}
	if _, _, err := s.PutSubscription(ctx, sub("audit"), nil); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListSubscriptions(ctx, "acme", "orders")
	if err != nil || len(list) != 2 || list[0].Name != "audit" || list[1].Name != "billing" {
		t.Fatalf("list: %v, %v", list, err)
	}
	if _, err := s.GetSubscription(ctx, "other", "orders", "billing"); !errors.Is(err, kairos.ErrNotFound) {
		t.Errorf("another tenant's read: %v, want not found", err)
	}
	if err := s.DeleteSubscription(ctx, "acme", "orders", "billing"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSubscription(ctx, "acme", "orders", "billing"); !errors.Is(err, kairos.ErrNotFound) {
		t.Errorf("second delete: %v, want not found", err)
	}
	cached, err := s.Subscriptions(ctx, "acme", "orders")
	if err != nil || len(cached) != 1 || cached[0].Name != "audit" {
		t.Errorf("the cache shows this store's delete at once: %v, %v", cached, err)
	}
}

func TestSubscriptionCacheSeesThisStoresWritesAtOnce(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, Options{})
	if subs, err := s.Subscriptions(ctx, "acme", "orders"); err != nil || len(subs) != 0 {
		t.Fatalf("none yet: %v, %v", subs, err)
	}
	if _, _, err := s.PutSubscription(ctx, sub("a"), nil); err != nil {
		t.Fatal(err)
	}
	subs, err := s.Subscriptions(ctx, "acme", "orders")
	if err != nil || len(subs) != 1 {
		t.Fatalf("after put: %v, %v", subs, err)
	}
	if _, err := s.PauseSubscription(ctx, "acme", "orders", "a", true); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Subscription(ctx, "acme", "orders", "a"); err != nil || !got.Paused {
		t.Errorf("after pause: paused %v, %v", got.Paused, err)
	}
}

func TestSubscriptionPutKeepsOrSetsPaused(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, Options{})
	yes, no := true, false
	if got, _, err := s.PutSubscription(ctx, sub("a"), &yes); err != nil || !got.Paused {
		t.Fatalf("put paused: %v, %v", got.Paused, err)
	}
	if got, _, err := s.PutSubscription(ctx, sub("a"), nil); err != nil || !got.Paused {
		t.Fatalf("a put that does not say keeps it paused: %v, %v", got.Paused, err)
	}
	if got, _, err := s.PutSubscription(ctx, sub("a"), &no); err != nil || got.Paused {
		t.Fatalf("put resumed: %v, %v", got.Paused, err)
	}
	if _, err := s.PauseSubscription(ctx, "acme", "orders", "nope", true); !errors.Is(err, kairos.ErrNotFound) {
		t.Errorf("pause of none: %v", err)
	}
}

func TestParkedDeliveryIsFiledAgainAtResume(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	if _, _, err := s.PutSubscription(ctx, sub("a"), nil); err != nil {
		t.Fatal(err)
	}
	runAt := clk.Now().Add(time.Minute).Truncate(time.Millisecond)
	id := kairos.DeliveryID("msg_1", "a")
	j, err := s.Enqueue(ctx, kairos.Job{JobKey: key(id), RunAt: runAt, Labels: map[string]string{kairos.LabelSubscription: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if parked, err := s.ParkDelivery(ctx, "acme", "orders", "a", id, j.RunAt); err != nil || parked {
		t.Fatalf("a delivery of a running subscription is not parked: %v, %v", parked, err)
	}
	if _, err := s.PauseSubscription(ctx, "acme", "orders", "a", true); err != nil {
		t.Fatal(err)
	}
	// as a worker gives it back: due ParkFor from now
	if _, err := s.Reschedule(ctx, key(id), clk.Now().Add(kairos.ParkFor)); err != nil {
		t.Fatal(err)
	}
	if parked, err := s.ParkDelivery(ctx, "acme", "orders", "a", id, runAt); err != nil || !parked {
		t.Fatalf("park while paused: %v, %v", parked, err)
	}
	if n, _ := s.Parked(ctx, "acme", "orders", "a"); n != 1 {
		t.Fatalf("parked %d, want 1", n)
	}
	if _, err := s.PauseSubscription(ctx, "acme", "orders", "a", false); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetJob(ctx, key(id))
	if err != nil {
		t.Fatal(err)
	}
	if !got.NextRunAt.Equal(runAt) || !got.RunAt.Equal(runAt) {
		t.Errorf("after resume: run_at %s next %s, want both %s", got.RunAt, got.NextRunAt, runAt)
	}
	if n, _ := s.Parked(ctx, "acme", "orders", "a"); n != 0 {
		t.Errorf("parked %d after resume, want 0", n)
	}
}

func TestSubscriptionCounts(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	for _, n := range []string{"a", "b"} {
		if _, _, err := s.PutSubscription(ctx, sub(n), nil); err != nil {
			t.Fatal(err)
		}
	}
	born := clk.Now()
	move := func(sub string, c SubscriptionCounts) DeliveryMove {
		return DeliveryMove{Subscription: sub, Born: born, SubscriptionCounts: c}
	}
	err := s.CountDeliveries(ctx, "acme", "orders", []DeliveryMove{move("a", SubscriptionCounts{Pending: 3}), move("b", SubscriptionCounts{Pending: 1})})
	if err == nil {
		err = s.CountDeliveries(ctx, "acme", "orders", []DeliveryMove{move("a", SubscriptionCounts{Pending: -2, Delivered: 1, Dead: 1}),
			move("none", SubscriptionCounts{Pending: 1})})
	}
	if err != nil {
		t.Fatal(err)
	}
	wantSubscriptionCounts(t, s, map[string]SubscriptionCounts{"a": {Pending: 1, Delivered: 1, Dead: 1}, "b": {Pending: 1}})
}

func wantSubscriptionCounts(t *testing.T, s *Store, want map[string]SubscriptionCounts) {
	t.Helper()
	got, err := s.SubscriptionCountsOf(context.Background(), "acme", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
}

// A delivery of a subscription deleted, that ends later, counts nowhere:
// neither while the name is free nor in a subscription put again under
// it, which starts at zero and counts only its own deliveries.
func TestSubscriptionPutAgainStartsAtZero(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	if _, _, err := s.PutSubscription(ctx, sub("a"), nil); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	old := kairos.Job{JobKey: key(kairos.DeliveryID("m1", "a")), CreatedAt: clk.Now()}
	old2 := kairos.Job{JobKey: key(kairos.DeliveryID("m2", "a")), CreatedAt: clk.Now()}
	if err := s.CountDeliveries(ctx, "acme", "orders", []DeliveryMove{{Subscription: "a", Born: old.CreatedAt, SubscriptionCounts: SubscriptionCounts{Pending: 2}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSubscription(ctx, "acme", "orders", "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeliveryEnded(ctx, old, "a", kairos.StateDead); err != nil {
		t.Fatal(err)
	}
	wantSubscriptionCounts(t, s, map[string]SubscriptionCounts{})
	clk.Add(time.Second)
	if _, created, err := s.PutSubscription(ctx, sub("a"), nil); err != nil || !created {
		t.Fatalf("put again: created %v, %v", created, err)
	}
	if err := s.DeliveryEnded(ctx, old2, "a", kairos.StateDelivered); err != nil {
		t.Fatal(err)
	}
	wantSubscriptionCounts(t, s, map[string]SubscriptionCounts{})
	clk.Add(time.Second)
	mine := kairos.Job{JobKey: key(kairos.DeliveryID("m3", "a")), CreatedAt: clk.Now()}
	if err := s.CountDeliveries(ctx, "acme", "orders", []DeliveryMove{{Subscription: "a", Born: mine.CreatedAt, SubscriptionCounts: SubscriptionCounts{Pending: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeliveryEnded(ctx, mine, "a", kairos.StateDelivered); err != nil {
		t.Fatal(err)
	}
	wantSubscriptionCounts(t, s, map[string]SubscriptionCounts{"a": {Delivered: 1}})
	if _, created, err := s.PutSubscription(ctx, sub("a"), nil); err != nil || created {
		t.Fatalf("a put that replaces: created %v, %v", created, err)
	}
	wantSubscriptionCounts(t, s, map[string]SubscriptionCounts{"a": {Delivered: 1}})
}

// A subscription put before incarnations were kept (no "<sub>:g" field)
// counts every move of its name, as it did.
func TestSubscriptionWithoutIncarnationCountsAsBefore(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	if _, _, err := s.PutSubscription(ctx, sub("a"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.c.HDel(ctx, s.k.subscriptionCounts("acme", "orders"), "a"+countBorn).Err(); err != nil {
		t.Fatal(err)
	}
	j := kairos.Job{JobKey: key(kairos.DeliveryID("m1", "a")), CreatedAt: clk.Now().Add(-time.Hour)}
	if err := s.DeliveryEnded(ctx, j, "a", kairos.StateDead); err != nil {
		t.Fatal(err)
	}
	wantSubscriptionCounts(t, s, map[string]SubscriptionCounts{"a": {Dead: 1}})
}

// A bulk cancel or replay of deliveries moves their subscriptions' counts
// as single cancels and replays do.
func TestBulkOperationsMoveSubscriptionCounts(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	for _, n := range []string{"a", "b"} {
		if _, _, err := s.PutSubscription(ctx, sub(n), nil); err != nil {
			t.Fatal(err)
		}
	}
	// a's deliveries are due at dueA, b's in an hour
	publish := func(msg string, dueA time.Time) {
		t.Helper()
		var moves []DeliveryMove
		for _, n := range []string{"a", "b"} {
			at := dueA
			if n == "b" {
				at = clk.Now().Add(time.Hour)
			}
			j, err := s.Enqueue(ctx, kairos.Job{JobKey: key(kairos.DeliveryID(msg, n)), RunAt: at,
				Labels: map[string]string{kairos.LabelSubscription: n}})
			if err != nil {
				t.Fatal(err)
			}
			moves = append(moves, DeliveryMove{Subscription: n, Born: j.CreatedAt, SubscriptionCounts: SubscriptionCounts{Pending: 1}})
		}
		if err := s.CountDeliveries(ctx, "acme", "orders", moves); err != nil {
			t.Fatal(err)
		}
	}
	kill := func(id string) {
		t.Helper()
		c := claimOne(t, s, id)
		if _, err := s.Finish(ctx, c.Job.JobKey, kairos.Attempt{N: c.Job.Attempts, At: clk.Now(), Status: 410}, kairos.OutcomeDead, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeliveryEnded(ctx, c.Job, "a", kairos.StateDead); err != nil {
			t.Fatal(err)
		}
	}
	publish("m1", clk.Now())
	kill(kairos.DeliveryID("m1", "a"))
	publish("m2", clk.Now())
	kill(kairos.DeliveryID("m2", "a"))
	publish("m3", clk.Now().Add(time.Hour))
	wantSubscriptionCounts(t, s, map[string]SubscriptionCounts{"a": {Pending: 1, Dead: 2}, "b": {Pending: 3}})
	run := func(action string, f BulkFilter) {
		t.Helper()
		op := Operation{ID: NewOperationID(), Tenant: "acme", Topic: "orders", Action: action, Filter: f}
		cur := ""
		for range 100 {
			step, err := s.BulkBatch(ctx, op, cur, 10)
			if err != nil || step.Uncounted != nil {
				t.Fatal(err, step.Uncounted)
			}
			if step.Finished {
				return
			}
			cur = step.Cursor
		}
		t.Fatal("the walk did not finish")
	}
	run(ActionReplay, BulkFilter{State: kairos.StateDead, Labels: map[string]string{kairos.LabelSubscription: "a"}})
	wantSubscriptionCounts(t, s, map[string]SubscriptionCounts{"a": {Pending: 3}, "b": {Pending: 3}})
	run(ActionCancel, BulkFilter{Labels: map[string]string{kairos.LabelSubscription: "b"}})
	wantSubscriptionCounts(t, s, map[string]SubscriptionCounts{"a": {Pending: 3}, "b": {}})
	run(ActionCancel, BulkFilter{Labels: map[string]string{kairos.LabelSubscription: "b"}}) // cancelled already: moves nothing
	wantSubscriptionCounts(t, s, map[string]SubscriptionCounts{"a": {Pending: 3}, "b": {}})
}

func TestSubscriptionSigningKeys(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, Options{NewSecret: secretGen()})
	own := sub("a")
	own.Signing = kairos.SigningSubscription
	if _, _, err := s.PutSubscription(ctx, own, nil); err != nil {
		t.Fatal(err)
	}
	k, err := s.GetSubscriptionSigningKeys(ctx, "acme", "orders", "a")
	if err != nil || k.Current == "" || k.Next == "" {
		t.Fatalf("keys: %+v, %v", k, err)
	}
	d := own.DeliveryTopic(kairos.Topic{Tenant: "acme", Name: "orders"})
	secret, err := s.SigningSecret(ctx, "acme", d.OwnSecret())
	if err != nil || secret != k.Current {
		t.Errorf("a delivery signs with %q (%v), want the subscription's %q", secret, err, k.Current)
	}
	topicSecret, _ := s.SigningSecret(ctx, "acme", "")
	if topicSecret == k.Current {
		t.Error("the subscription's secret is the tenant's")
	}
	r, err := s.RotateSubscriptionSigningKeys(ctx, "acme", "orders", "a")
	if err != nil || r.Current != k.Next {
		t.Errorf("rotate: %+v, %v", r, err)
	}
	if err := s.DeleteSubscription(ctx, "acme", "orders", "a"); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.c.Exists(ctx, s.k.subscriptionSigningKeys("acme", "orders", "a")).Result(); n != 0 {
		t.Error("a deleted subscription's keys are left")
	}
}

// A subscription takes at most a kilobyte of Redis: its settings, with a
// filter, event types and a header, as one field of its topic's hash.
func TestSubscriptionTakesUnderAKilobyte(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, Options{})
	const n = 200
	for i := range n {
		if _, _, err := s.PutSubscription(ctx, sub(fmt.Sprintf("endpoint-%03d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	used, err := s.c.MemoryUsage(ctx, s.k.subscriptions("acme", "orders"), 0).Result()
	if err != nil {
		t.Skipf("MEMORY USAGE: %v", err)
	}
	if per := used / n; per > 1024 {
		t.Errorf("a subscription takes %d bytes of Redis, want at most 1024", per)
	} else {
		t.Logf("a subscription takes %d bytes of Redis", per)
	}
}

func TestDeleteTopicDropsItsSubscriptions(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, Options{})
	if _, _, err := s.PutSubscription(ctx, sub("a"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic(ctx, "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	if subs, err := s.ListSubscriptions(ctx, "acme", "orders"); err != nil || len(subs) != 0 {
		t.Errorf("after the topic's delete: %v, %v", subs, err)
	}
}

func TestMessagePutGetAndExpiry(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Retention: time.Hour})
	m := Message{Tenant: "acme", Topic: "orders", ID: "msg_1", EventType: "order.created", Payload: []byte(`{"a":1}`),
		Labels: map[string]string{"region": "eu"}, RunAt: clk.Now().Add(time.Minute).Truncate(time.Millisecond),
		CreatedAt: clk.Now().Truncate(time.Millisecond), Deliveries: []Delivery{{Subscription: "a", JobID: "msg_1.a"}}}
	if err := s.PutMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMessage(ctx, "acme", "orders", "msg_1")
	if err != nil {
		t.Fatal(err)
	}
	want := m
	want.Payload = nil // its deliveries' jobs carry it
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	ttl, _ := s.c.PTTL(ctx, s.k.message("acme", "orders", "msg_1")).Result()
	if ttl < time.Hour || ttl > time.Hour+time.Minute {
		t.Errorf("ttl %s, want the retention after its run_at (1h1m)", ttl)
	}
	if _, err := s.GetMessage(ctx, "other", "orders", "msg_1"); !errors.Is(err, kairos.ErrNotFound) {
		t.Errorf("another tenant's read: %v", err)
	}
	none := Message{Tenant: "acme", Topic: "orders", ID: "msg_2", Payload: []byte("plain text"), RunAt: clk.Now(), CreatedAt: clk.Now()}
	if err := s.PutMessage(ctx, none); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetMessage(ctx, "acme", "orders", "msg_2")
	if err != nil || string(got.Payload) != "plain text" || got.Deliveries == nil || len(got.Deliveries) != 0 {
		t.Errorf("a message matching none: %+v, %v", got, err)
	}
}

func TestMessageDedup(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, Options{})
	id, dup, err := s.DedupMessage(ctx, "acme", "orders", "k1", "msg_1", time.Minute)
	if err != nil || dup || id != "msg_1" {
		t.Fatalf("first: %s %v %v", id, dup, err)
	}
	id, dup, err = s.DedupMessage(ctx, "acme", "orders", "k1", "msg_2", time.Minute)
	if err != nil || !dup || id != "msg_1" {
		t.Fatalf("second: %s %v %v", id, dup, err)
	}
	if _, dup, _ := s.DedupMessage(ctx, "acme", "other", "k1", "msg_3", time.Minute); dup {
		t.Error("another topic's key is its own")
	}
}

// A message's record names its deliveries' subscriptions only (each job id
// is <message id>.<sub>) and leaves the payload to their jobs; a record of
// the form written before, job ids and payload kept, still reads.
func TestMessageRecordIsCompactAndTheFormerFormReads(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Retention: time.Hour})
	now := clk.Now().Truncate(time.Millisecond)
	m := Message{Tenant: "acme", Topic: "orders", ID: "msg_1", Payload: []byte(`{"a":1}`), RunAt: now, CreatedAt: now,
		Deliveries: []Delivery{{Subscription: "a", JobID: "msg_1.a"}, {Subscription: "b-2", JobID: "msg_1.b-2"}}}
	if err := s.PutMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	raw, err := s.c.Get(ctx, s.k.message("acme", "orders", "msg_1")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`{"r":%d,"c":%d,"n":["a","b-2"]}`, ms(now), ms(now)); raw != want {
		t.Errorf("stored %s, want %s", raw, want)
	}
	bad := m
	bad.Deliveries = []Delivery{{Subscription: "a", JobID: "other.a"}}
	if err := s.PutMessage(ctx, bad); err == nil {
		t.Error("a delivery whose job id is not <message id>.<sub> was stored")
	}

	former := fmt.Sprintf(`{"e":"order.created","p":{"a":1},"l":{"region":"eu"},"r":%d,"c":%d,"d":[{"s":"a","j":"msg_0.a"}]}`, ms(now), ms(now))
	if err := s.c.Set(ctx, s.k.message("acme", "orders", "msg_0"), former, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMessage(ctx, "acme", "orders", "msg_0")
	if err != nil {
		t.Fatal(err)
	}
	want := Message{Tenant: "acme", Topic: "orders", ID: "msg_0", EventType: "order.created", Payload: []byte(`{"a":1}`),
		Labels: map[string]string{"region": "eu"}, RunAt: now, CreatedAt: now, Deliveries: []Delivery{{Subscription: "a", JobID: "msg_0.a"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("a record of the former form (-want +got):\n%s", d)
	}
	formerNone := fmt.Sprintf(`{"pt":"plain","r":%d,"c":%d,"d":[]}`, ms(now), ms(now))
	if err := s.c.Set(ctx, s.k.message("acme", "orders", "msg_00"), formerNone, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetMessage(ctx, "acme", "orders", "msg_00"); err != nil || string(got.Payload) != "plain" || got.Deliveries == nil || len(got.Deliveries) != 0 {
		t.Errorf("a former record matching none: %+v, %v", got, err)
	}
}

// Delivery ends that come together are counted together: one script call
// a topic, not one an end (a call's own cost in Redis is many times a
// move's), and each end is counted once.
func TestDeliveryEndsAreCountedTogether(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	for _, name := range []string{"a", "b"} {
		if _, _, err := s.PutSubscription(ctx, sub(name), nil); err != nil {
			t.Fatal(err)
		}
	}
	clk.Add(time.Second)
	const n = 200
	if err := s.CountDeliveries(ctx, "acme", "orders", []DeliveryMove{
		{Subscription: "a", Born: clk.Now(), SubscriptionCounts: SubscriptionCounts{Pending: n / 2}},
		{Subscription: "b", Born: clk.Now(), SubscriptionCounts: SubscriptionCounts{Pending: n / 2}}}); err != nil {
		t.Fatal(err)
	}
	before := fcalls(t, s)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			name, st := "a", kairos.StateDelivered
			if i%2 == 1 {
				name, st = "b", kairos.StateDead
			}
			j := kairos.Job{JobKey: key(kairos.DeliveryID("m"+strconv.Itoa(i), name)), CreatedAt: clk.Now()}
			if err := s.DeliveryEnded(ctx, j, name, st); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	wantSubscriptionCounts(t, s, map[string]SubscriptionCounts{"a": {Delivered: n / 2}, "b": {Dead: n / 2}})
	if calls := fcalls(t, s) - before; calls > n/10 {
		t.Errorf("%d delivery ends took %d script calls, want them counted together (at most %d)", n, calls, n/10)
	}
}

// fcalls is how many script calls Redis has run (INFO commandstats).
func fcalls(t *testing.T, s *Store) int {
	t.Helper()
	info := s.c.Info(context.Background(), "commandstats").Val()
	for line := range strings.SplitSeq(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_fcall:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}
