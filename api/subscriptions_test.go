package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/kairos-sh/kairos"
)

// TestSubscriptionRoutes: a subscription is put (201, then 200), read,
// listed, paused and resumed; a filter that does not parse is a 400 naming
// its path; another tenant's subscription is a 404 on every route.
func TestSubscriptionRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme, globex := e.token(t, "acme", false), e.token(t, "globex", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	body := obj{"url": "https://billing.example.com/hooks", "event_types": []string{"order.created"},
		"filter": obj{"data.total": obj{"$gte": 100}}, "headers": obj{"Authorization": "Bearer secret"},
		"rate": obj{"limit": 5, "period": "1s"}, "breaker": obj{"failures": 3}, "description": "billing"}
	created := want[subscriptionResponse](t, e.do(t, "PUT", "/v1/topics/orders/subscriptions/billing", acme, body), http.StatusCreated)
	if created.Signing != "topic" || created.Breaker.State != "closed" || created.Breaker.Failures != 3 || created.Headers["Authorization"] == "Bearer secret" {
		t.Errorf("created %+v", created)
	}
	want[subscriptionResponse](t, e.do(t, "PUT", "/v1/topics/orders/subscriptions/billing", acme, body), http.StatusOK)
	got := want[subscriptionResponse](t, e.do(t, "GET", "/v1/topics/orders/subscriptions/billing?reveal=headers", acme, nil), http.StatusOK)
	if got.Headers["Authorization"] != "Bearer secret" || string(got.Filter) != `{"data.total":{"$gte":100}}` {
		t.Errorf("read %+v", got)
	}
	list := want[struct{ Subscriptions []subscriptionResponse }](t, e.do(t, "GET", "/v1/topics/orders/subscriptions", acme, nil), http.StatusOK)
	if len(list.Subscriptions) != 1 {
		t.Errorf("list %+v", list)
	}
	paused := want[subscriptionResponse](t, e.do(t, "POST", "/v1/topics/orders/subscriptions/billing/pause", acme, nil), http.StatusOK)
	resumed := want[subscriptionResponse](t, e.do(t, "POST", "/v1/topics/orders/subscriptions/billing/resume", acme, nil), http.StatusOK)
	if !paused.Paused || resumed.Paused {
		t.Errorf("paused %v, resumed %v", paused.Paused, resumed.Paused)
	}

	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/topics/orders/subscriptions/billing"},
		{"DELETE", "/v1/topics/orders/subscriptions/billing"},
		{"POST", "/v1/topics/orders/subscriptions/billing/pause"},
		{"POST", "/v1/topics/orders/subscriptions/billing/resume"},
		{"GET", "/v1/topics/orders/subscriptions/billing/signing-keys"},
		{"POST", "/v1/topics/orders/subscriptions/billing/signing-keys/rotate"},
		{"GET", "/v1/topics/orders/subscriptions/9bad"},
	} {
		wantProblem(t, e.do(t, r.method, r.path, globex, nil), http.StatusNotFound)
	}
	if l := want[struct{ Subscriptions []subscriptionResponse }](t, e.do(t, "GET", "/v1/topics/orders/subscriptions", globex, nil), http.StatusOK); len(l.Subscriptions) != 0 {
		t.Errorf("another tenant lists %+v", l)
	}

	before := e.snapshot(t)
	p := e.refused(t, e.do(t, "PUT", "/v1/topics/orders/subscriptions/other", acme,
		obj{"url": "https://x.example.com", "filter": obj{"data.amount": obj{"$gt": obj{}}}}), before, http.StatusBadRequest, []string{"filter.data.amount.$gt"}, false)
	if !strings.Contains(p.Errors[0].Message, "number or string") {
		t.Errorf("filter error %+v", p.Errors)
	}
	e.refused(t, e.do(t, "PUT", "/v1/topics/orders/subscriptions/other", acme,
		obj{"url": "http://127.0.0.1/hook", "signing": "tenant", "event_types": []string{""}}), before, http.StatusBadRequest, []string{"event_types[0]", "signing", "url"}, true)
	// an empty list of event types would receive nothing: refused, not
	// stored as "every event type"
	e.refused(t, e.do(t, "PUT", "/v1/topics/orders/subscriptions/other", acme,
		obj{"url": "https://x.example.com", "event_types": []string{}}), before, http.StatusBadRequest, []string{"event_types"}, false)
	e.refused(t, e.do(t, "PUT", "/v1/topics/orders/subscriptions/other", acme, obj{}), before, http.StatusBadRequest, []string{"url"}, true)
	wantProblem(t, e.do(t, "PUT", "/v1/topics/orders/subscriptions/a.b", acme, obj{"url": "https://x.example.com"}, specLenient()), http.StatusNotFound)
}

// TestSubscriptionSigningKeys: a subscription signing with its own
// secret has keys apart from the topic's and the tenant's; one signed as
// its topic answers 409.
func TestSubscriptionSigningKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	want[subscriptionResponse](t, e.do(t, "PUT", "/v1/topics/orders/subscriptions/plain", acme, obj{"url": "https://a.example.com"}), http.StatusCreated)
	own := want[subscriptionResponse](t, e.do(t, "PUT", "/v1/topics/orders/subscriptions/own", acme, obj{"url": "https://b.example.com", "signing": "subscription"}), http.StatusCreated)
	if own.Signing != "subscription" {
		t.Errorf("signing %q", own.Signing)
	}
	tenant := want[signingKeysResponse](t, e.do(t, "GET", "/v1/signing-keys", acme, nil), http.StatusOK)
	keys := want[signingKeysResponse](t, e.do(t, "GET", "/v1/topics/orders/subscriptions/own/signing-keys", acme, nil), http.StatusOK)
	if keys.Current == tenant.Current || !strings.HasPrefix(keys.Current, "whsec_") {
		t.Errorf("keys %+v, tenant %+v", keys, tenant)
	}
	rotated := want[signingKeysResponse](t, e.do(t, "POST", "/v1/topics/orders/subscriptions/own/signing-keys/rotate", acme, nil), http.StatusOK)
	if rotated.Current != keys.Next {
		t.Errorf("rotated %+v from %+v", rotated, keys)
	}
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders/subscriptions/plain/signing-keys", acme, nil), http.StatusConflict)
}

type publishAnswer struct {
	ID         string
	Topic      string
	RunAt      string `json:"run_at"`
	Result     string
	Deliveries []deliveryRef
}

// TestPublish: a message goes to the subscriptions whose event types and
// filters match, each a job "<message id>.<sub>" labelled with its
// subscription; one that matches none answers an empty list; a dedup key
// publishes once; the message reads back with each delivery's state.
func TestPublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme, globex := e.token(t, "acme", false), e.token(t, "globex", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	for name, body := range map[string]obj{
		"all":     {"url": "https://all.example.com"},
		"created": {"url": "https://created.example.com", "event_types": []string{"order.created"}},
		"big":     {"url": "https://big.example.com", "filter": obj{"total": obj{"$gte": 100}}},
	} {
		want[subscriptionResponse](t, e.do(t, "PUT", "/v1/topics/orders/subscriptions/"+name, acme, body), http.StatusCreated)
	}
	pub := want[publishAnswer](t, e.do(t, "POST", "/v1/topics/orders/messages", acme,
		obj{"event_type": "order.created", "payload": obj{"total": 120}, "labels": obj{"region": "eu"}, "delay": "1m"}), http.StatusCreated)
	if len(pub.Deliveries) != 3 || pub.RunAt != ms(t0.Add(60e9)) {
		t.Fatalf("published %+v", pub)
	}
	for _, d := range pub.Deliveries {
		if d.JobID != pub.ID+"."+d.Subscription {
			t.Errorf("delivery %+v of %s", d, pub.ID)
		}
		j := e.getJob(t, acme, "orders", d.JobID)
		if j.Labels["subscription"] != d.Subscription || j.Labels["region"] != "eu" || j.State != kairos.StateScheduled {
			t.Errorf("delivery job %+v", j)
		}
	}
	small := want[publishAnswer](t, e.do(t, "POST", "/v1/topics/orders/messages", acme, obj{"event_type": "order.paid", "payload": obj{"total": 5}}), http.StatusCreated)
	if len(small.Deliveries) != 1 || small.Deliveries[0].Subscription != "all" {
		t.Errorf("published %+v", small)
	}
	if err := e.store.DeleteSubscription(context.Background(), "acme", "orders", "all"); err != nil {
		t.Fatal(err)
	}
	none := e.do(t, "POST", "/v1/topics/orders/messages", acme, obj{"event_type": "order.paid", "payload": obj{"total": 5}})
	if none.Status != http.StatusCreated || !strings.Contains(string(none.Body), `"deliveries":[]`) {
		t.Errorf("a message matching none: %d %s", none.Status, none.Body)
	}

	first := want[publishAnswer](t, e.do(t, "POST", "/v1/topics/orders/messages", acme, obj{"id": "m-1", "payload": obj{"total": 500}, "dedup_key": "k"}), http.StatusCreated)
	dup := want[publishAnswer](t, e.do(t, "POST", "/v1/topics/orders/messages", acme, obj{"id": "m-2", "payload": obj{"total": 500}, "dedup_key": "k"}), http.StatusOK)
	if dup.ID != "m-1" || dup.Result != "duplicate" || len(dup.Deliveries) != len(first.Deliveries) {
		t.Errorf("duplicate %+v of %+v", dup, first)
	}

	msg := want[messageResponse](t, e.do(t, "GET", "/v1/topics/orders/messages/"+pub.ID, acme, nil), http.StatusOK)
	if msg.EventType != "order.created" || len(msg.Deliveries) != 3 || msg.Deliveries[0].State != kairos.StateScheduled || string(msg.Payload) != `{"total":120}` {
		t.Errorf("message %+v", msg)
	}
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders/messages/"+pub.ID, globex, nil), http.StatusNotFound)
	wantProblem(t, e.do(t, "POST", "/v1/topics/orders/messages", globex, obj{"payload": 1}), http.StatusNotFound)

	before := e.snapshot(t)
	e.refused(t, e.do(t, "POST", "/v1/topics/orders/messages", acme, obj{"labels": obj{"subscription": "x"}, "event_type": "", "priority": 12}),
		before, http.StatusBadRequest, []string{"event_type", "labels.subscription", "priority"}, false)
	e.refused(t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"labels": obj{"subscription": "x"}}),
		before, http.StatusBadRequest, []string{"labels.subscription"}, false)
}

// TestDeleteSubscriptionCancelsItsDeliveries: its pending deliveries are
// cancelled by a bulk operation; another subscription's stay.
func TestDeleteSubscriptionCancelsItsDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	for _, name := range []string{"a", "b"} {
		want[subscriptionResponse](t, e.do(t, "PUT", "/v1/topics/orders/subscriptions/"+name, acme, obj{"url": "https://x.example.com/" + name}), http.StatusCreated)
	}
	pub := want[publishAnswer](t, e.do(t, "POST", "/v1/topics/orders/messages", acme, obj{"payload": 1, "delay": "1h"}), http.StatusCreated)
	del := want[deleteSubscriptionResponse](t, e.do(t, "DELETE", "/v1/topics/orders/subscriptions/a", acme, nil), http.StatusAccepted)
	if del.Operation == "" {
		t.Fatal("no operation")
	}
	e.waitOperation(t, acme, del.Operation)
	if j := e.getJob(t, acme, "orders", pub.ID+".a"); j.State != kairos.StateCancelled {
		t.Errorf("a's delivery is %s", j.State)
	}
	if j := e.getJob(t, acme, "orders", pub.ID+".b"); j.State != kairos.StateScheduled {
		t.Errorf("b's delivery is %s", j.State)
	}
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders/subscriptions/a", acme, nil), http.StatusNotFound)
}
