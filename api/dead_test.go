package api

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestListDead lists dead jobs across topics, most recently dead first:
// a tenant's own, and an admin's of every tenant or of one.
func TestListDead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme, globex, admin := e.token(t, "acme", false), e.token(t, "globex", false), e.token(t, "ops", true)
	for _, tk := range []string{acme, globex} {
		e.putTopic(t, tk, "orders", obj{"callback_url": hook})
		e.putTopic(t, tk, "billing", obj{"callback_url": hook})
	}
	type dead struct{ tenant, topic, id string }
	order := []dead{{"acme", "orders", "o1"}, {"globex", "billing", "g1"}, {"acme", "billing", "b1"}, {"acme", "orders", "o2"}}
	for _, d := range order {
		tk := acme
		if d.tenant == "globex" {
			tk = globex
		}
		e.createJob(t, tk, d.topic, obj{"id": d.id, "delay": "0s", "payload": obj{"n": 1}})
		e.deadJob(t, d.tenant, d.topic, d.id)
		e.clock.Add(time.Second)
	}
	e.createJob(t, acme, "orders", obj{"id": "alive", "delay": "1h"})

	list := func(authz, query string) []string {
		t.Helper()
		var out []string
		cursor := ""
		for range 20 {
			q := query
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			page := want[listResponse](t, e.do(t, "GET", "/v1/dead?"+q, authz, nil), http.StatusOK)
			for _, j := range page.Jobs {
				if j.State != "dead" || j.Payload != nil || j.DoneAt == "" || j.LastAttempt == nil {
					t.Errorf("listed %+v", j)
				}
				out = append(out, j.Tenant+"/"+j.Topic+"/"+j.ID)
			}
			if page.NextCursor == "" {
				return out
			}
			cursor = page.NextCursor
		}
		t.Fatal("listing never ended")
		return nil
	}
	of := func(tenant string) []string {
		var out []string
		for i := len(order) - 1; i >= 0; i-- {
			if tenant == "" || order[i].tenant == tenant {
				out = append(out, order[i].tenant+"/"+order[i].topic+"/"+order[i].id)
			}
		}
		return out
	}
	for _, c := range []struct {
		who, authz, query, tenant string
	}{
		{"acme", acme, "", "acme"},
		{"acme paged", acme, "limit=1", "acme"},
		{"acme naming itself", acme, "tenant=acme", "acme"},
		{"globex", globex, "", "globex"},
		{"admin", admin, "", ""},
		{"admin paged", admin, "limit=3", ""},
		{"admin of acme", admin, "tenant=acme&limit=2", "acme"},
	} {
		if d := cmp.Diff(of(c.tenant), list(c.authz, c.query)); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.who, d)
		}
	}

	// A replayed job is no longer dead.
	want[jobResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/o2/retry", acme, nil), http.StatusAccepted)
	if d := cmp.Diff([]string{"acme/billing/b1", "acme/orders/o1"}, list(acme, "")); d != "" {
		t.Errorf("after a replay (-want +got):\n%s", d)
	}
}

// TestListDeadValidation checks the query rules, and that nothing changes.
func TestListDeadValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "o1", "delay": "0s"})
	e.deadJob(t, "acme", "orders", "o1")
	e.checkRefusals(t, "/v1/dead", acme, pagingRefusals)
}
