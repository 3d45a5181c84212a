package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// says reports whether out holds want, their runs of spaces and tabs
// (a table's) alike.
func says(out, want string) bool {
	return strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " "))
}

// waitDelivery polls `kairos messages get` until the message's delivery
// to sub passes ok, and returns it.
func (k kairosCLI) waitDelivery(topic, id, sub string, ok func(client.Delivery) bool) client.Delivery {
	k.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var m client.Message
		k.json(&m, "messages", "get", topic, id)
		for _, d := range m.Deliveries {
			if d.Subscription == sub && ok(d) {
				return d
			}
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("message %s/%s: its delivery to %s is not as wanted after 15s: %+v", topic, id, sub, m.Deliveries)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCLISubscriptionsAndMessages drives fan-out from the command line
// against a kairos started in this process: a subscription put with every
// flag and read back, a filter refused with its path, a message published
// to the one it matches and followed to delivered, a paused
// subscription's delivery parked and delivered after resume, its own
// signing keys rotated, a duplicate publish, and a delete.
func TestCLISubscriptionsAndMessages(t *testing.T) {
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	k := kairosCLI{t: t, url: ti.url, token: ti.token}
	k.ok("", "topics", "put", "orders", "--callback-url", ti.rcvURL+"/topic")

	out := k.ok("", "subscriptions", "put", "orders", "billing", "--callback-url", ti.rcvURL+"/billing",
		"--event-type", "order.created", "--event-type", "order.paid", "--filter", `{"data.total": {"$gte": 100}}`,
		"--header", "X-Team=billing", "--method", "PUT", "--timeout", "5s", "--max-attempts", "3",
		"--backoff-initial", "1s", "--backoff-max", "1m", "--rate", "10/1s", "--parallelism", "2", "--breaker", "4/30s",
		"--signing", "subscription", "--description", "billing's hook")
	for _, want := range []string{"registered subscription billing of orders", "order.created,order.paid", `{"data.total":{"$gte":100}}`,
		"X-Team: billing", "method\tPUT", "10 per 1s", "closed (opens after 4 failures in a row, for 30s)", "signing\tsubscription",
		"0 pending, 0 delivered, 0 dead"} {
		if !says(out, want) {
			t.Errorf("subscriptions put: no %q in\n%s", want, out)
		}
	}
	var s client.Subscription
	k.json(&s, "subscriptions", "get", "orders", "billing")
	if s.URL != ti.rcvURL+"/billing" || len(s.EventTypes) != 2 || string(compact(t, s.Filter)) != `{"data.total":{"$gte":100}}` ||
		s.Headers["X-Team"] != "billing" || s.Method != "PUT" || s.Timeout != client.Duration(5*time.Second) || s.MaxAttempts != 3 ||
		s.Backoff == nil || s.Backoff.Max != client.Duration(time.Minute) || s.Rate == nil || s.Rate.Limit != 10 || s.Parallelism != 2 ||
		s.Breaker.Failures != 4 || s.Signing != client.SigningSubscription || s.Description != "billing's hook" || s.Paused {
		t.Errorf("subscriptions get --json: %+v", s)
	}
	s = client.Subscription{}
	k.json(&s, "subscriptions", "put", "orders", "small", "--callback-url", ti.rcvURL+"/small", "--filter", `{"data.total": {"$lt": 100}}`, "--paused")
	if !s.Paused || s.Signing != "topic" || s.EventTypes != nil || s.Breaker.State != "closed" {
		t.Errorf("subscriptions put --paused --json: %+v", s)
	}
	if out := k.ok("", "subscriptions", "put", "orders", "small", "--callback-url", ti.rcvURL+"/small", "--filter", `{"data.total": {"$lt": 100}}`); !says(out, "updated subscription small") || !says(out, "paused true") {
		t.Errorf("a put without --paused leaves it paused, and says updated:\n%s", out)
	}

	k.fails(exitError, []string{"subscriptions", "put", "orders", "bad", "--callback-url", ti.rcvURL, "--filter", `{"data.total": {"$gt": {}}}`},
		"Invalid request (400)", "  filter.data.total.$gt: ")
	k.fails(exitUsage, []string{"subscriptions", "put", "orders", "bad", "--filter", `{}`}, "--callback-url is required")
	k.fails(exitUsage, []string{"subscriptions", "put", "orders", "bad", "--callback-url", ti.rcvURL, "--filter", `nope`}, "--filter is not a JSON object")
	k.fails(exitUsage, []string{"subscriptions", "put", "orders", "bad", "--callback-url", ti.rcvURL, "--rate", "fifty"}, "LIMIT/PERIOD", "kairos subscriptions put -h")
	k.fails(exitUsage, []string{"subscriptions", "put", "orders", "bad", "--callback-url", ti.rcvURL, "--paused=maybe"}, "want true or false")
	k.fails(exitNotFound, []string{"subscriptions", "get", "orders", "bad"}, "Not Found (404)")

	out = k.ok("", "subscriptions", "list", "orders")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME ") ||
		!strings.HasPrefix(lines[1], "billing ") || !strings.HasPrefix(lines[2], "small ") || !strings.Contains(lines[2], "(all)") {
		t.Errorf("subscriptions list: a header, billing and small, got:\n%s", out)
	}
	var list struct{ Subscriptions []client.Subscription }
	k.json(&list, "subscriptions", "list", "orders")
	if len(list.Subscriptions) != 2 {
		t.Errorf("subscriptions list --json: %+v", list)
	}

	// A message billing's filter and event types match, and small's do not.
	var p client.Published
	k.json(&p, "messages", "publish", "orders", "--id", "m1", "--event-type", "order.created", "--payload", `{"data": {"total": 120}}`,
		"--label", "region:eu")
	if p.ID != "m1" || len(p.Deliveries) != 1 || p.Deliveries[0] != (client.DeliveryRef{Subscription: "billing", JobID: "m1.billing"}) {
		t.Errorf("messages publish --json: %+v", p)
	}
	k.waitDelivery("orders", "m1", "billing", func(d client.Delivery) bool { return d.State == client.StateDelivered })
	out = k.ok("", "messages", "get", "orders", "m1")
	for _, want := range []string{"order.created", "label region:eu", `payload {"data":{"total":120}}`, "billing m1.billing delivered 1"} {
		if !says(out, want) {
			t.Errorf("messages get: no %q in\n%s", want, out)
		}
	}
	var j client.Job
	k.json(&j, "jobs", "get", "orders", "m1.billing")
	if j.Labels["subscription"] != "billing" || j.Labels["region"] != "eu" {
		t.Errorf("the delivery's job: labels %v", j.Labels)
	}

	// A message for paused small: its delivery is parked, then delivered
	// after resume.
	out = k.ok("", "messages", "publish", "orders", "--id", "m2", "--payload-file", "-")
	if !strings.Contains(out, "published message m2 to orders: 0 deliveries") {
		t.Errorf("messages publish matching none (no payload) said:\n%s", out)
	}
	out = k.ok(`{"data": {"total": 5}}`, "messages", "publish", "orders", "--id", "m3", "--payload-file", "-")
	if !strings.Contains(out, "published message m3 to orders: 1 deliveries") || !strings.Contains(out, "m3.small") {
		t.Errorf("messages publish to paused small said:\n%s", out)
	}
	k.waitDelivery("orders", "m3", "small", func(d client.Delivery) bool { return d.NextRunAt.After(time.Now().Add(24 * time.Hour)) })
	if out := k.ok("", "subscriptions", "resume", "orders", "small"); !strings.Contains(out, "resumed subscription small of orders (1 pending)") {
		t.Errorf("subscriptions resume said: %s", out)
	}
	k.waitDelivery("orders", "m3", "small", func(d client.Delivery) bool { return d.State == client.StateDelivered })
	if out := k.ok("", "subscriptions", "pause", "orders", "small"); !strings.Contains(out, "paused subscription small of orders") {
		t.Errorf("subscriptions pause said: %s", out)
	}

	// A duplicate publish publishes nothing and names the first message.
	k.ok("", "messages", "publish", "orders", "--dedup-key", "order-9/created", "--dedup-window", "1h", "--event-type", "order.created",
		"--payload", `{"data": {"total": 900}}`, "--delay", "1h")
	if out := k.ok("", "messages", "publish", "orders", "--dedup-key", "order-9/created", "--payload", `{}`); !strings.Contains(out, "duplicate message msg_") || !strings.Contains(out, "1 deliveries") {
		t.Errorf("messages publish --dedup-key again said:\n%s", out)
	}

	// Own signing keys: shown, rotated; small signs as its topic does.
	var keys, rotated client.SigningKeys
	k.json(&keys, "subscriptions", "keys", "orders", "billing")
	k.json(&rotated, "subscriptions", "rotate-key", "orders", "billing")
	if !strings.HasPrefix(keys.Current, "whsec_") || rotated.Current != keys.Next || rotated.Next == keys.Next {
		t.Errorf("subscriptions keys %+v, then rotate-key %+v", keys, rotated)
	}
	k.fails(exitError, []string{"subscriptions", "keys", "orders", "small"}, "Conflict (409)", "signing")

	var d client.SubscriptionDeleted
	k.json(&d, "subscriptions", "delete", "orders", "small")
	if d.Subscription != "small" {
		t.Errorf("subscriptions delete --json: %+v", d)
	}
	if out := k.ok("", "subscriptions", "delete", "orders", "billing"); !strings.Contains(out, "deleted subscription billing of orders") {
		t.Errorf("subscriptions delete said: %s", out)
	}
	k.fails(exitNotFound, []string{"subscriptions", "get", "orders", "small"}, "Not Found (404)")
	k.fails(exitNotFound, []string{"messages", "get", "orders", "nope"}, "Not Found (404)")
	k.fails(exitUsage, []string{"messages", "publish", "orders", "--payload", "{oops"}, "not JSON")
	k.fails(exitUsage, []string{"subscriptions", "frobnicate"}, `no command "frobnicate"`)
}
