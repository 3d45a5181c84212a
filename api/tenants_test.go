package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTenantIsolation shows tenant B can neither see nor touch tenant A's
// topics, jobs or signing keys, even under the same names.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	a, b := e.token(t, "acme", false), e.token(t, "globex", false)
	e.putTopic(t, a, "orders", obj{"callback_url": hook})
	e.createJob(t, a, "orders", obj{"id": "j1", "delay": "1h", "payload": obj{"a": 1}})
	e.createJob(t, a, "orders", obj{"id": "d1", "delay": "0s"})
	e.deadJob(t, "acme", "orders", "d1")
	aKeys := want[signingKeysResponse](t, e.do(t, "GET", "/v1/signing-keys", a, nil), http.StatusOK)

	j1 := e.getJob(t, a, "orders", "j1")
	d1 := e.getJob(t, a, "orders", "d1")
	before := e.snapshot(t)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/topics/orders", nil},
		{"DELETE", "/v1/topics/orders", nil},
		{"GET", "/v1/topics/orders/jobs", nil},
		{"GET", "/v1/topics/orders/jobs/j1", nil},
		{"PATCH", "/v1/topics/orders/jobs/j1", obj{"delay": "1m"}},
		{"DELETE", "/v1/topics/orders/jobs/j1", nil},
		{"POST", "/v1/topics/orders/jobs/d1/retry", nil},
		{"DELETE", "/v1/topics/orders/jobs/d1", nil},
	} {
		wantProblem(t, e.do(t, c.method, c.path, b, c.body), http.StatusNotFound)
	}
	topics := want[struct{ Topics []topicResponse }](t, e.do(t, "GET", "/v1/topics", b, nil), http.StatusOK)
	if len(topics.Topics) != 0 {
		t.Errorf("globex sees topics %+v", topics.Topics)
	}
	stats := want[statsResponse](t, e.do(t, "GET", "/v1/stats", b, nil), http.StatusOK)
	if len(stats.Topics) != 0 || stats.DueSoon != nil {
		t.Errorf("globex sees stats %+v", stats)
	}
	e.unchanged(t, before)

	// B's own topic and job of the same names leave A's alone.
	e.putTopic(t, b, "orders", obj{"callback_url": hook + "/globex"})
	e.createJob(t, b, "orders", obj{"id": "j1", "delay": "2h", "payload": obj{"b": 1}})
	if res := e.do(t, "DELETE", "/v1/topics/orders/jobs/j1", b, nil); res.Status != http.StatusNoContent {
		t.Fatalf("globex cancels its own job: %d %s", res.Status, res.Body)
	}
	if d := cmp.Diff(j1, e.getJob(t, a, "orders", "j1")); d != "" {
		t.Errorf("acme's job j1 changed (-before +after):\n%s", d)
	}
	if d := cmp.Diff(d1, e.getJob(t, a, "orders", "d1")); d != "" {
		t.Errorf("acme's job d1 changed (-before +after):\n%s", d)
	}
	if tp := want[topicResponse](t, e.do(t, "GET", "/v1/topics/orders", a, nil), http.StatusOK); tp.CallbackURL != hook {
		t.Errorf("acme's topic changed: %+v", tp)
	}

	bKeys := want[signingKeysResponse](t, e.do(t, "GET", "/v1/signing-keys", b, nil), http.StatusOK)
	if bKeys.Current == aKeys.Current || bKeys.Next == aKeys.Next || bKeys.Current == aKeys.Next {
		t.Errorf("tenants share signing keys: acme %+v globex %+v", aKeys, bKeys)
	}
	want[signingKeysResponse](t, e.do(t, "POST", "/v1/signing-keys/rotate", b, nil), http.StatusOK)
	if got := want[signingKeysResponse](t, e.do(t, "GET", "/v1/signing-keys", a, nil), http.StatusOK); got != aKeys {
		t.Errorf("globex's rotation changed acme's keys: %+v, was %+v", got, aKeys)
	}
}

// TestTenantParameter covers ?tenant=: admins only, checked, and "every
// tenant" for an admin's topic list and stats.
func TestTenantParameter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	a, b, admin := e.token(t, "acme", false), e.token(t, "globex", false), e.token(t, "ops", true)
	e.putTopic(t, a, "orders", obj{"callback_url": hook})
	e.putTopic(t, b, "orders", obj{"callback_url": hook})
	e.putTopic(t, b, "billing", obj{"callback_url": hook})
	e.createJob(t, a, "orders", obj{"id": "j1", "delay": "7m"})
	e.createJob(t, b, "orders", obj{"id": "j1", "delay": "31m"})
	e.createJob(t, b, "billing", obj{"id": "j2", "delay": "2h"})

	before := e.snapshot(t)
	for _, path := range []string{"/v1/topics", "/v1/stats", "/v1/signing-keys", "/v1/topics/orders", "/v1/topics/orders/jobs", "/v1/topics/orders/jobs/j1"} {
		p := wantProblem(t, e.do(t, "GET", path+"?tenant=globex", a, nil), http.StatusForbidden)
		if p.Type != problemBase+"forbidden" {
			t.Errorf("GET %s: type %q", path, p.Type)
		}
	}
	wantProblem(t, e.do(t, "POST", "/v1/signing-keys/rotate?tenant=globex", a, nil), http.StatusForbidden)
	wantProblem(t, e.do(t, "DELETE", "/v1/topics/orders/jobs/j1?tenant=globex", a, nil), http.StatusForbidden)
	p := wantProblem(t, e.do(t, "GET", "/v1/topics?tenant=no!pe", admin, nil), http.StatusBadRequest)
	wantFields(t, p, "tenant")
	if res := e.do(t, "GET", "/v1/topics?tenant=no!pe", admin, nil); res.Spec.RequestErr == nil {
		t.Errorf("openapi.yaml accepts an invalid tenant name")
	}
	e.unchanged(t, before)

	// A tenant may name itself.
	if got := want[jobResponse](t, e.do(t, "GET", "/v1/topics/orders/jobs/j1?tenant=acme", a, nil), http.StatusOK); got.Tenant != "acme" {
		t.Errorf("own tenant: %+v", got)
	}

	type key struct{ Tenant, Name string }
	listed := func(authz, query string) []key {
		t.Helper()
		l := want[struct{ Topics []topicResponse }](t, e.do(t, "GET", "/v1/topics"+query, authz, nil), http.StatusOK)
		var out []key
		for _, tp := range l.Topics {
			out = append(out, key{tp.Tenant, tp.Name})
		}
		return out
	}
	all := []key{{"acme", "orders"}, {"globex", "billing"}, {"globex", "orders"}}
	if d := cmp.Diff(all, listed(admin, "")); d != "" {
		t.Errorf("admin's topics (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]key{{"acme", "orders"}}, listed(admin, "?tenant=acme")); d != "" {
		t.Errorf("admin's topics of acme (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]key{{"globex", "billing"}, {"globex", "orders"}}, listed(b, "")); d != "" {
		t.Errorf("globex's topics (-want +got):\n%s", d)
	}

	stats := want[statsResponse](t, e.do(t, "GET", "/v1/stats", admin, nil), http.StatusOK)
	var seen []key
	for _, ts := range stats.Topics {
		seen = append(seen, key{ts.Tenant, ts.Topic})
	}
	if d := cmp.Diff(all, seen); d != "" {
		t.Errorf("admin's stats topics (-want +got):\n%s", d)
	}
	// 7m falls in the second 5-minute slot, 31m in the seventh, 2h in none.
	wantDue := []int64{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}
	if d := cmp.Diff(wantDue, stats.DueSoon); d != "" {
		t.Errorf("due_next_hour (-want +got):\n%s", d)
	}
	if s := want[statsResponse](t, e.do(t, "GET", "/v1/stats?tenant=acme", admin, nil), http.StatusOK); len(s.Topics) != 1 || s.DueSoon != nil {
		t.Errorf("admin's stats of acme: %+v", s)
	}

	// An admin acts on a tenant's job with ?tenant=; without it, on its own.
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders/jobs/j1", admin, nil), http.StatusNotFound)
	got := want[jobResponse](t, e.do(t, "PATCH", "/v1/topics/orders/jobs/j1?tenant=globex", admin, obj{"delay": "1m"}), http.StatusOK)
	if got.Tenant != "globex" || got.RunAt != ms(t0.Add(time.Minute)) {
		t.Errorf("admin rescheduled %+v", got)
	}
}

func TestSigningKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	a := e.token(t, "acme", false)
	first := want[signingKeysResponse](t, e.do(t, "GET", "/v1/signing-keys", a, nil), http.StatusOK)
	if first.Current == first.Next {
		t.Errorf("current and next are the same: %+v", first)
	}
	if again := want[signingKeysResponse](t, e.do(t, "GET", "/v1/signing-keys", a, nil), http.StatusOK); again != first {
		t.Errorf("keys changed between reads: %+v then %+v", first, again)
	}
	rotated := want[signingKeysResponse](t, e.do(t, "POST", "/v1/signing-keys/rotate", a, nil), http.StatusOK)
	if rotated.Current != first.Next || rotated.Next == first.Next || rotated.Next == first.Current {
		t.Errorf("rotation of %+v gave %+v; want the old next to become current and a new next", first, rotated)
	}
	if got := want[signingKeysResponse](t, e.do(t, "GET", "/v1/signing-keys", a, nil), http.StatusOK); got != rotated {
		t.Errorf("keys after rotation %+v, want %+v", got, rotated)
	}
}
