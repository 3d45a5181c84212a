package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// TestQuotaPendingRefused: past its max_pending a tenant's creates are
// 429s with Retry-After that store nothing, single, batch, schedule and
// replay alike; other tenants are not held back; an admin sets, shows and
// removes the quota.
func TestQuotaPendingRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme, globex, admin := e.token(t, "acme", false), e.token(t, "globex", false), e.token(t, "ops", true)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.putTopic(t, globex, "orders", obj{"callback_url": hook})

	e.refused(t, e.do(t, "PUT", "/v1/tenants/acme/quota", acme, obj{"max_pending": 100}), e.snapshot(t), http.StatusForbidden, nil, false)
	e.refused(t, e.do(t, "GET", "/v1/tenants/globex/quota", acme, nil), e.snapshot(t), http.StatusForbidden, nil, false)
	e.refused(t, e.do(t, "PUT", "/v1/tenants/acme/quota", admin, obj{"max_pending": -1}), e.snapshot(t), http.StatusBadRequest, []string{"max_pending"}, true)
	e.refused(t, e.do(t, "PUT", "/v1/tenants/acme/quota", admin, obj{"rate": obj{"limit": 5, "period": "soon"}}), e.snapshot(t), http.StatusBadRequest, []string{"rate.period"}, false)
	e.refused(t, e.do(t, "PUT", "/v1/tenants/a!b/quota", admin, obj{"max_pending": 1}), e.snapshot(t), http.StatusBadRequest, []string{"tenant"}, false)

	q := want[quotaResponse](t, e.do(t, "PUT", "/v1/tenants/acme/quota", admin, obj{"max_pending": 3}), http.StatusOK)
	if q.MaxPending != 3 || !q.Custom || q.Rate != nil || q.Pending != 0 {
		t.Fatalf("quota %+v", q)
	}
	for _, id := range []string{"a", "b"} {
		e.createJob(t, acme, "orders", obj{"id": id, "delay": "1h"})
	}
	// a replacement adds no pending job (but is checked as one more)
	if res := e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"id": "a", "delay": "2h"}); res.Status != http.StatusOK {
		t.Fatalf("replace: %d %s", res.Status, res.Body)
	}
	res := e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, obj{"jobs": []any{obj{"id": "c", "delay": "1h"}, obj{"id": "d", "delay": "1h"}}})
	got := want[batchResponse](t, res, http.StatusMultiStatus)
	if got.Results[0].Status != 201 || got.Results[1].Status != 429 || got.Results[1].Error.Type != problemBase+"too-many-requests" {
		t.Fatalf("batch past the quota: %+v", got.Results)
	}

	before := e.snapshot(t)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/topics/orders/jobs", obj{"delay": "1m"}},
		{"POST", "/v1/topics/fresh/jobs", obj{"delay": "1m", "callback_url": hook}}, // would register a topic
		{"PUT", "/v1/topics/orders/schedules/s", obj{"every": "1h"}},
	} {
		res := e.do(t, c.method, c.path, acme, c.body)
		p := e.refused(t, res, before, http.StatusTooManyRequests, nil, false)
		if !strings.Contains(p.Detail, "max_pending") || !strings.Contains(p.Detail, "at most 3") {
			t.Errorf("%s %s: detail %q", c.method, c.path, p.Detail)
		}
		if ra := res.Header.Get("Retry-After"); ra != "5" {
			t.Errorf("%s %s: Retry-After %q", c.method, c.path, ra)
		}
	}
	p := wantProblem(t, e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, obj{"jobs": []any{obj{"delay": "1m"}}}), http.StatusTooManyRequests)
	if p.Type != problemBase+"batch-failed" {
		t.Errorf("a batch whose every item is over the quota: %+v", p)
	}
	e.unchanged(t, before)
	e.createJob(t, globex, "orders", obj{"delay": "1m"}) // another tenant is not held back

	q = want[quotaResponse](t, e.do(t, "GET", "/v1/tenants/acme/quota", acme, nil), http.StatusOK)
	if q.Pending != 3 || q.MaxPending != 3 {
		t.Errorf("quota as acme reads it: %+v", q)
	}
	if res := e.do(t, "DELETE", "/v1/topics/orders/jobs/a", acme, nil); res.Status != http.StatusNoContent {
		t.Fatalf("cancel: %d", res.Status)
	}
	e.createJob(t, acme, "orders", obj{"delay": "1m"})

	if res := e.do(t, "DELETE", "/v1/tenants/acme/quota", admin, nil); res.Status != http.StatusNoContent {
		t.Fatalf("delete quota: %d %s", res.Status, res.Body)
	}
	q = want[quotaResponse](t, e.do(t, "GET", "/v1/tenants/acme/quota", admin, nil), http.StatusOK)
	if q.Custom || q.MaxPending != 0 || q.Pending != 3 {
		t.Errorf("default quota: %+v", q)
	}
	e.createJob(t, acme, "orders", obj{"delay": "1m"})
}

// TestQuotaRateRefused: past its request rate a tenant's requests are
// 429s with Retry-After, reads included, and change nothing; admins and
// other tenants are not held back; the default comes from the config.
func TestQuotaRateRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Quota: quotaDefaults(0, 2, time.Minute)})
	acme, globex, admin := e.token(t, "acme", false), e.token(t, "globex", false), e.token(t, "ops", true)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"delay": "1m"})
	before := e.snapshot(t)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/topics", nil},
		{"POST", "/v1/topics/orders/jobs", obj{"delay": "1m"}},
	} {
		res := e.do(t, c.method, c.path, acme, c.body)
		p := e.refused(t, res, before, http.StatusTooManyRequests, nil, false)
		if !strings.Contains(p.Detail, "request rate") {
			t.Errorf("detail %q", p.Detail)
		}
		if ra := res.Header.Get("Retry-After"); ra != "30" {
			t.Errorf("Retry-After %q, want 30 (2 a minute)", ra)
		}
	}
	want[quotaResponse](t, e.do(t, "GET", "/v1/tenants/acme/quota", admin, nil), http.StatusOK)
	e.putTopic(t, globex, "orders", obj{"callback_url": hook})
	e.clock.Add(30 * time.Second)
	e.createJob(t, acme, "orders", obj{"delay": "1m"})

	// an admin raises acme's rate: it applies at once in this process
	want[quotaResponse](t, e.do(t, "PUT", "/v1/tenants/acme/quota", admin, obj{"rate": obj{"limit": 1000}}), http.StatusOK)
	for range 5 {
		e.createJob(t, acme, "orders", obj{"delay": "1m"})
	}
}

func quotaDefaults(maxPending int64, rate int, period time.Duration) kairos.Quota {
	return kairos.Quota{MaxPending: maxPending, Rate: rate, RatePeriod: period}
}
