package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testwait"
	"github.com/kairos-sh/kairos/verify"
)

// TestFanoutDeliversToMatchingSubscriptionsSigned: a message published to
// a topic with three subscriptions reaches the two whose event types and
// filter match, each at its own URL with its own headers, Kairos-
// Subscription, Kairos-Message-Id and a webhook-id of its own, signed with
// the subscription's secret when it has one and the topic's otherwise.
func TestFanoutDeliversToMatchingSubscriptionsSigned(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	ctx := context.Background()
	topicRcv := newReceiver(t, nil)
	e.putTopicWith("orders", client.TopicRequest{CallbackURL: topicRcv.URL + "/topic",
		CallbackSettings: client.CallbackSettings{Headers: map[string]string{"X-Topic-Secret": "not for subscribers"}}})
	rcv := map[string]*receiver{"billing": newReceiver(t, nil), "big": newReceiver(t, nil), "refunds": newReceiver(t, nil)}
	for name, req := range map[string]client.SubscriptionRequest{
		"billing": {URL: rcv["billing"].URL + "/billing", Signing: client.SigningSubscription,
			CallbackSettings: client.CallbackSettings{Headers: map[string]string{"X-Team": "billing"}}},
		"big":     {URL: rcv["big"].URL + "/big", Filter: json.RawMessage(`{"data.total": {"$gte": 100}}`)},
		"refunds": {URL: rcv["refunds"].URL + "/refunds", EventTypes: []string{"order.refunded"}},
	} {
		if _, _, err := e.c.PutSubscription(ctx, "orders", name, req); err != nil {
			t.Fatal(err)
		}
	}
	pub, err := e.c.Publish(ctx, "orders", client.MessageRequest{EventType: "order.created", Payload: json.RawMessage(`{"data":{"total":120}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(pub.Deliveries) != 2 {
		t.Fatalf("deliveries %+v, want billing and big", pub.Deliveries)
	}
	own, err := e.c.GetSubscriptionSigningKeys(ctx, "orders", "billing")
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := e.c.GetSigningKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for name, secret := range map[string]string{"billing": own.Current, "big": tenant.Current} {
		h := rcv[name].waitHits(t, 1, 10*time.Second)[0]
		if got := h.Header.Get("Kairos-Subscription"); got != name {
			t.Errorf("%s: Kairos-Subscription %q", name, got)
		}
		if got := h.Header.Get("Kairos-Message-Id"); got != pub.ID {
			t.Errorf("%s: Kairos-Message-Id %q, want %s", name, got, pub.ID)
		}
		if got := h.Header.Get("Kairos-Job-Id"); got != pub.ID+"."+name {
			t.Errorf("%s: Kairos-Job-Id %q", name, got)
		}
		if h.Header.Get("X-Topic-Secret") != "" {
			t.Errorf("%s got the topic's headers", name)
		}
		if h.URL != "/"+name {
			t.Errorf("%s was called at %s", name, h.URL)
		}
		ids[h.Header.Get("webhook-id")] = true
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(h.Body, h.Header); err != nil {
			t.Errorf("%s: the signature does not verify with its secret: %v", name, err)
		}
		if err := verify.Callback([]string{secret}, h.Header, h.Body, verify.Options{URL: rcv[name].URL + "/" + name}); err != nil {
			t.Errorf("%s: verify.Callback: %v", name, err)
		}
	}
	if rcv["billing"].all()[0].Header.Get("X-Team") != "billing" {
		t.Error("billing's own header was not sent")
	}
	if len(ids) != 2 {
		t.Errorf("webhook-ids %v: want one a delivery", ids)
	}
	if n := len(rcv["refunds"].all()) + len(topicRcv.all()); n != 0 {
		t.Errorf("%d calls to the refunds subscription or the topic's URL", n)
	}
	e.waitState("orders", pub.ID+".billing", client.StateDelivered, 5*time.Second)
	m, err := e.c.GetMessage(ctx, "orders", pub.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Deliveries {
		if d.State != client.StateDelivered && d.Subscription == "billing" {
			t.Errorf("delivery %+v", d)
		}
	}
	// a delivery's end is counted after it is recorded, with the ends
	// that come with it
	waitSubscriptionCounts(t, e, "orders", "billing", client.SubscriptionCounts{Delivered: 1})
}

// waitSubscriptionCounts waits until subscription sub of topic reads want's counts.
func waitSubscriptionCounts(t *testing.T, e *engine, topic, sub string, want client.SubscriptionCounts) {
	t.Helper()
	var got client.SubscriptionCounts
	testwait.UntilNil(t, 10*time.Second, func() error {
		s, err := e.c.GetSubscription(context.Background(), topic, sub)
		if err != nil {
			return err
		}
		if got = s.Counts; got != want {
			return fmt.Errorf("%s's counts %+v, want %+v", sub, got, want)
		}
		return nil
	}, sub+"'s counts")
}

// TestFanoutOneSubscriptionFailingHoldsNoOther: one subscription's
// receiver answers 500 until its breaker opens, and its deliveries go
// dead; another's deliveries go on time meanwhile. A dead delivery
// replays on its own.
func TestFanoutOneSubscriptionFailingHoldsNoOther(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	ctx := context.Background()
	e.putTopic("events", "https://topic.example.com/unused")
	var failing atomic.Bool
	failing.Store(true)
	bad := newReceiver(t, func(n int, h hit) int {
		if failing.Load() {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	good := newReceiver(t, nil)
	if _, _, err := e.c.PutSubscription(ctx, "events", "bad", client.SubscriptionRequest{URL: bad.URL,
		CallbackSettings: client.CallbackSettings{MaxAttempts: 2,
			Backoff: &client.Backoff{Initial: client.Duration(100 * time.Millisecond), Max: client.Duration(100 * time.Millisecond)}},
		Breaker: &client.BreakerRequest{Failures: 2, Cooldown: client.Duration(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.PutSubscription(ctx, "events", "good", client.SubscriptionRequest{URL: good.URL}); err != nil {
		t.Fatal(err)
	}
	var first *client.Published
	const n = 6
	for i := range n {
		at := client.Time{Time: time.Now().Add(300*time.Millisecond + time.Duration(i)*200*time.Millisecond)}
		p, err := e.c.Publish(ctx, "events", client.MessageRequest{Payload: json.RawMessage(`{"i":1}`), RunAt: &at})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = p
		}
	}
	hits := good.waitHits(t, n, 10*time.Second)
	for _, h := range hits {
		due, _ := time.Parse(time.RFC3339Nano, h.Header.Get("Kairos-Scheduled-At"))
		if late := h.At.Sub(due); late < 0 || late > time.Second {
			t.Errorf("good's delivery %s came %v after its time", h.Header.Get("Kairos-Job-Id"), late)
		}
	}
	brk, err := e.c.GetSubscription(ctx, "events", "bad")
	if err != nil {
		t.Fatal(err)
	}
	if brk.Breaker.State != "open" {
		t.Errorf("bad's breaker %+v, want open", brk.Breaker)
	}
	if got := len(bad.all()); got > 3 {
		t.Errorf("bad was called %d times; its breaker opens after 2 failures (and a probe)", got)
	}
	top, err := e.c.GetTopic(ctx, "events")
	if err != nil || top.Breaker.State != "closed" {
		t.Errorf("the topic's own breaker %+v (%v)", top.Breaker, err)
	}
	// the first delivery to bad had its 2 attempts before the breaker opened
	dead := e.waitState("events", first.ID+".bad", client.StateDead, 10*time.Second)
	if dead.Attempts != 2 {
		t.Errorf("dead after %d attempts", dead.Attempts)
	}
	failing.Store(false)
	if _, err := e.c.RetryJob(ctx, "events", first.ID+".bad"); err != nil {
		t.Fatal(err)
	}
	// its breaker is still open: the replay waits for the cool-down; the
	// dead letter is a job of its own, replayed on its own
	if j := e.job("events", first.ID+".bad"); j.State == client.StateDead {
		t.Errorf("after replay the delivery is %s", j.State)
	}
	if j := e.job("events", first.ID+".good"); j.State != client.StateDelivered {
		t.Errorf("good's delivery of the replayed message is %s", j.State)
	}
}

// TestFanoutReplayDeadDelivery: a delivery that died replays and is
// delivered to its subscription's URL as it is then.
func TestFanoutReplayDeadDelivery(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	ctx := context.Background()
	e.putTopic("events", "https://topic.example.com/unused")
	down := newReceiver(t, func(int, hit) int { return http.StatusGone })
	up := newReceiver(t, nil)
	if _, _, err := e.c.PutSubscription(ctx, "events", "a", client.SubscriptionRequest{URL: down.URL}); err != nil {
		t.Fatal(err)
	}
	p, err := e.c.Publish(ctx, "events", client.MessageRequest{Payload: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	id := p.Deliveries[0].JobID
	e.waitState("events", id, client.StateDead, 10*time.Second)
	waitSubscriptionCounts(t, e, "events", "a", client.SubscriptionCounts{Dead: 1})
	if _, _, err := e.c.PutSubscription(ctx, "events", "a", client.SubscriptionRequest{URL: up.URL + "/moved"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the worker's cached subscription lapses (a second)
	if _, err := e.c.RetryJob(ctx, "events", id); err != nil {
		t.Fatal(err)
	}
	h := up.waitHits(t, 1, 10*time.Second)[0]
	if h.URL != "/moved" || h.Header.Get("Kairos-Job-Id") != id {
		t.Errorf("replayed to %s as %s", h.URL, h.Header.Get("Kairos-Job-Id"))
	}
	e.waitState("events", id, client.StateDelivered, 5*time.Second)
	waitSubscriptionCounts(t, e, "events", "a", client.SubscriptionCounts{Delivered: 1})
}

// TestFanoutPauseResume: a paused subscription's deliveries do not fire
// (they are parked, once, as they come due) while another's do; resume
// files them again and they are delivered.
func TestFanoutPauseResume(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	ctx := context.Background()
	e.putTopic("events", "https://topic.example.com/unused")
	paused, running := newReceiver(t, nil), newReceiver(t, nil)
	yes := true
	if _, _, err := e.c.PutSubscription(ctx, "events", "paused", client.SubscriptionRequest{URL: paused.URL, Paused: &yes}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.PutSubscription(ctx, "events", "running", client.SubscriptionRequest{URL: running.URL}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		p, err := e.c.Publish(ctx, "events", client.MessageRequest{Payload: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID+".paused")
	}
	running.waitHits(t, 3, 10*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := e.store.Parked(ctx, "acme", "events", "paused")
		if err != nil {
			t.Fatal(err)
		}
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries parked, want 3", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if j := e.job("events", ids[0]); j.NextRunAt.Before(time.Now().Add(24*time.Hour)) || j.Attempts != 0 {
		t.Errorf("a parked delivery: next %s, %d attempts", j.NextRunAt, j.Attempts)
	}
	if n := len(paused.all()); n != 0 {
		t.Fatalf("the paused subscription was called %d times", n)
	}
	if _, err := e.c.ResumeSubscription(ctx, "events", "paused"); err != nil {
		t.Fatal(err)
	}
	paused.waitHits(t, 3, 10*time.Second)
	for _, id := range ids {
		if j := e.waitState("events", id, client.StateDelivered, 5*time.Second); j.Attempts != 1 {
			t.Errorf("%s: %d attempts", id, j.Attempts)
		}
	}
}

// TestFanoutDeleteCancelsPending: deleting a subscription cancels its
// pending deliveries; the other subscription's still fire.
func TestFanoutDeleteCancelsPending(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	ctx := context.Background()
	e.putTopic("events", "https://topic.example.com/unused")
	gone, kept := newReceiver(t, nil), newReceiver(t, nil)
	for name, r := range map[string]*receiver{"gone": gone, "kept": kept} {
		if _, _, err := e.c.PutSubscription(ctx, "events", name, client.SubscriptionRequest{URL: r.URL}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := e.c.Publish(ctx, "events", client.MessageRequest{Payload: json.RawMessage(`{}`), Delay: client.Duration(1500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.DeleteSubscription(ctx, "events", "gone"); err != nil {
		t.Fatal(err)
	}
	if j := e.job("events", p.ID+".gone"); j.State != client.StateCancelled {
		t.Errorf("the deleted subscription's delivery is %s", j.State)
	}
	kept.waitHits(t, 1, 10*time.Second)
	e.waitState("events", p.ID+".kept", client.StateDelivered, 5*time.Second)
	if n := len(gone.all()); n != 0 {
		t.Errorf("the deleted subscription was called %d times", n)
	}
}
