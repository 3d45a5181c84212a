package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"

	"github.com/google/go-cmp/cmp"
)

func TestTopicLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)

	full := obj{
		"callback_url": hook, "method": "put", "headers": obj{"x-shop": "eu-1"},
		"timeout": "10s", "max_attempts": 5, "backoff": obj{"initial": "2s", "max": "30m"}, "concurrency": 20,
	}
	res := e.do(t, "PUT", "/v1/topics/orders", acme, full)
	got := want[topicResponse](t, res, http.StatusCreated)
	wantTopic := topicResponse{
		Name: "orders", Tenant: "acme", CallbackURL: hook,
		CallbackSettingsResponse: CallbackSettingsResponse{Method: "PUT", Headers: map[string]string{"X-Shop": "eu-1"},
			Timeout: "10s", MaxAttempts: 5, Backoff: &backoffResponse{Initial: "2s", Max: "30m0s"}},
		Concurrency: 20, Breaker: breakerResponse{State: "closed"}, Signing: "tenant", CreatedAt: ms(t0), UpdatedAt: ms(t0),
		ResponseBytes: kairos.DefaultResponseBytes,
	}
	if d := cmp.Diff(wantTopic, got); d != "" {
		t.Errorf("created topic (-want +got):\n%s", d)
	}

	// A second PUT replaces every setting and keeps created_at.
	e.clock.Add(time.Minute)
	got = want[topicResponse](t, e.do(t, "PUT", "/v1/topics/orders", acme, obj{"callback_url": hook + "/v2"}), http.StatusOK)
	wantTopic = topicResponse{
		Name: "orders", Tenant: "acme", CallbackURL: hook + "/v2",
		CallbackSettingsResponse: CallbackSettingsResponse{Method: "POST",
			Timeout: "30s", MaxAttempts: 10, Backoff: &backoffResponse{Initial: "1s", Max: "1h0m0s"}},
		Concurrency: 10, Breaker: breakerResponse{State: "closed"}, Signing: "tenant", CreatedAt: ms(t0), UpdatedAt: ms(t0.Add(time.Minute)),
		ResponseBytes: kairos.DefaultResponseBytes,
	}
	if d := cmp.Diff(wantTopic, got); d != "" {
		t.Errorf("replaced topic (-want +got):\n%s", d)
	}
	got = want[topicResponse](t, e.do(t, "GET", "/v1/topics/orders", acme, nil), http.StatusOK)
	if d := cmp.Diff(wantTopic, got); d != "" {
		t.Errorf("GET topic (-want +got):\n%s", d)
	}

	e.putTopic(t, acme, "billing", obj{"callback_url": hook})
	list := want[struct{ Topics []topicResponse }](t, e.do(t, "GET", "/v1/topics", acme, nil), http.StatusOK)
	var names []string
	for _, tp := range list.Topics {
		names = append(names, tp.Name)
	}
	if d := cmp.Diff([]string{"billing", "orders"}, names); d != "" {
		t.Errorf("listed topics (-want +got):\n%s", d)
	}

	// A topic with a pending job cannot be deleted; once it is empty it can.
	e.createJob(t, acme, "orders", obj{"id": "j1", "delay": "1h"})
	p := wantProblem(t, e.do(t, "DELETE", "/v1/topics/orders", acme, nil), http.StatusConflict)
	if !strings.Contains(p.Detail, "1 pending or dead jobs") {
		t.Errorf("409 detail %q does not say how many jobs remain", p.Detail)
	}
	if res := e.do(t, "DELETE", "/v1/topics/orders/jobs/j1", acme, nil); res.Status != http.StatusNoContent {
		t.Fatalf("cancel: %d %s", res.Status, res.Body)
	}
	if res := e.do(t, "DELETE", "/v1/topics/orders", acme, nil); res.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", res.Status, res.Body)
	}
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders", acme, nil), http.StatusNotFound)
	wantProblem(t, e.do(t, "DELETE", "/v1/topics/orders", acme, nil), http.StatusNotFound)
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders/jobs", acme, nil), http.StatusNotFound)
}

func TestTopicDeleteWithDeadJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "j1", "delay": "0s"})
	e.deadJob(t, "acme", "orders", "j1")
	wantProblem(t, e.do(t, "DELETE", "/v1/topics/orders", acme, nil), http.StatusConflict)
	// Cancelling discards the dead job, and then the topic can go.
	if res := e.do(t, "DELETE", "/v1/topics/orders/jobs/j1", acme, nil); res.Status != http.StatusNoContent {
		t.Fatalf("cancel dead job: %d %s", res.Status, res.Body)
	}
	if res := e.do(t, "DELETE", "/v1/topics/orders", acme, nil); res.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", res.Status, res.Body)
	}
}

// TestTopicValidation sends one broken PUT per rule: each is refused with
// the field named, and Redis is left as it was.
func TestTopicValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook, "max_attempts": 3})

	tests := []struct {
		name   string
		topic  string
		body   any
		opts   []reqOption
		status int
		fields []string
		spec   bool // the spec refuses the request too
	}{
		{"topic name bad character", "bad!name", obj{"callback_url": hook}, nil, 400, []string{"topic"}, true},
		{"topic name too long", strings.Repeat("t", 65), obj{"callback_url": hook}, nil, 400, []string{"topic"}, true},
		{"topic name starts with dot", ".hidden", obj{"callback_url": hook}, nil, 400, []string{"topic"}, true},
		{"callback_url missing", "orders", obj{"method": "POST"}, nil, 400, []string{"callback_url"}, true},
		{"callback_url empty", "orders", obj{"callback_url": ""}, nil, 400, []string{"callback_url"}, true},
		{"callback_url ftp", "orders", obj{"callback_url": "ftp://example.com/x"}, nil, 400, []string{"callback_url"}, true},
		{"callback_url relative", "orders", obj{"callback_url": "/hook"}, nil, 400, []string{"callback_url"}, true},
		{"callback_url bad escape", "orders", obj{"callback_url": "https://example.com/%zz"}, nil, 400, []string{"callback_url"}, false},
		{"callback_url user info", "orders", obj{"callback_url": "https://user:pw@example.com/"}, nil, 400, []string{"callback_url"}, false},
		{"callback_url too long", "orders", obj{"callback_url": "https://example.com/" + strings.Repeat("a", 2048)}, nil, 400, []string{"callback_url"}, true},
		{"method", "orders", obj{"callback_url": hook, "method": "TRACE"}, nil, 400, []string{"method"}, true},
		{"header name", "orders", obj{"callback_url": hook, "headers": obj{"Bad Header": "x"}}, nil, 400, []string{"headers.Bad Header"}, false},
		{"header value", "orders", obj{"callback_url": hook, "headers": obj{"X-Foo": "a\r\nb"}}, nil, 400, []string{"headers.X-Foo"}, false},
		{"header Kairos-Signature", "orders", obj{"callback_url": hook, "headers": obj{"Kairos-Signature": "x"}}, nil, 400, []string{"headers.Kairos-Signature"}, false},
		{"header kairos-anything", "orders", obj{"callback_url": hook, "headers": obj{"kairos-topic": "x"}}, nil, 400, []string{"headers.kairos-topic"}, false},
		{"header webhook-id", "orders", obj{"callback_url": hook, "headers": obj{"webhook-id": "x"}}, nil, 400, []string{"headers.webhook-id"}, false},
		{"header hop-by-hop", "orders", obj{"callback_url": hook, "headers": obj{"Connection": "close"}}, nil, 400, []string{"headers.Connection"}, false},
		{"header twice", "orders", obj{"callback_url": hook, "headers": obj{"X-A": "1", "x-a": "2"}}, nil, 400, nil, false},
		{"too many headers", "orders", obj{"callback_url": hook, "headers": manyHeaders(51)}, nil, 400, []string{"headers"}, true},
		{"header value too long", "orders", obj{"callback_url": hook, "headers": obj{"X-Big": strings.Repeat("v", 4097)}}, nil, 400, []string{"headers.X-Big"}, true},
		// OpenAPI 3.0 cannot bound a name (propertyNames is 3.1): the description says it
		{"header name too long", "orders", obj{"callback_url": hook, "headers": obj{"X-" + strings.Repeat("n", 255): "v"}}, nil, 400, []string{"headers"}, false},
		{"timeout syntax", "orders", obj{"callback_url": hook, "timeout": "ten seconds"}, nil, 400, []string{"timeout"}, true},
		{"timeout too short", "orders", obj{"callback_url": hook, "timeout": "99ms"}, nil, 400, []string{"timeout"}, false},
		{"timeout too long", "orders", obj{"callback_url": hook, "timeout": "15m1s"}, nil, 400, []string{"timeout"}, false},
		{"max_attempts 0", "orders", obj{"callback_url": hook, "max_attempts": 0}, nil, 400, []string{"max_attempts"}, true},
		{"max_attempts 101", "orders", obj{"callback_url": hook, "max_attempts": 101}, nil, 400, []string{"max_attempts"}, true},
		{"max_attempts fraction", "orders", obj{"callback_url": hook, "max_attempts": 1.5}, nil, 400, []string{"max_attempts"}, true},
		{"backoff initial too short", "orders", obj{"callback_url": hook, "backoff": obj{"initial": "9ms"}}, nil, 400, []string{"backoff.initial"}, false},
		{"backoff max too long", "orders", obj{"callback_url": hook, "backoff": obj{"max": "169h"}}, nil, 400, []string{"backoff.max"}, false},
		{"backoff max below initial", "orders", obj{"callback_url": hook, "backoff": obj{"initial": "10s", "max": "5s"}}, nil, 400, []string{"backoff.max"}, false},
		{"backoff max below default initial", "orders", obj{"callback_url": hook, "backoff": obj{"max": "500ms"}}, nil, 400, []string{"backoff.max"}, false},
		{"backoff syntax", "orders", obj{"callback_url": hook, "backoff": obj{"initial": "1 s"}}, nil, 400, []string{"backoff.initial"}, true},
		{"concurrency 0", "orders", obj{"callback_url": hook, "concurrency": 0}, nil, 400, []string{"concurrency"}, true},
		{"concurrency 1001", "orders", obj{"callback_url": hook, "concurrency": 1001}, nil, 400, []string{"concurrency"}, true},
		{"rate limit 0", "orders", obj{"callback_url": hook, "rate": obj{"limit": 0, "period": "1s"}}, nil, 400, []string{"rate.limit"}, true},
		{"rate without period", "orders", obj{"callback_url": hook, "rate": obj{"limit": 5}}, nil, 400, []string{"rate.period"}, true},
		{"rate without limit", "orders", obj{"callback_url": hook, "rate": obj{"period": "1s"}}, nil, 400, []string{"rate.limit"}, true},
		{"rate period too short", "orders", obj{"callback_url": hook, "rate": obj{"limit": 5, "period": "500ms"}}, nil, 400, []string{"rate.period"}, false},
		{"parallelism 0", "orders", obj{"callback_url": hook, "parallelism": 0}, nil, 400, []string{"parallelism"}, true},
		{"parallelism 10001", "orders", obj{"callback_url": hook, "parallelism": 10001}, nil, 400, []string{"parallelism"}, true},
		{"flow_key bad character", "orders", obj{"callback_url": hook, "flow_key": "partner key"}, nil, 400, []string{"flow_key"}, true},
		{"flow_key empty", "orders", obj{"callback_url": hook, "flow_key": ""}, nil, 400, []string{"flow_key"}, true},
		{"failure_url relative", "orders", obj{"callback_url": hook, "failure_url": "/failed"}, nil, 400, []string{"failure_url"}, true},
		{"breaker failures 0", "orders", obj{"callback_url": hook, "breaker": obj{"failures": 0}}, nil, 400, []string{"breaker.failures"}, true},
		{"breaker cooldown too long", "orders", obj{"callback_url": hook, "breaker": obj{"cooldown": "11m"}}, nil, 400, []string{"breaker.cooldown"}, false},
		{"breaker cooldown too short", "orders", obj{"callback_url": hook, "breaker": obj{"cooldown": "100ms"}}, nil, 400, []string{"breaker.cooldown"}, false},
		{"unknown field", "orders", obj{"callback_url": hook, "url": hook}, nil, 400, []string{"url"}, true},
		{"malformed JSON", "orders", `{"callback_url": "` + hook, nil, 400, []string{"body"}, true},
		{"not an object", "orders", `["callback_url"]`, nil, 400, []string{"body"}, true},
		{"trailing data", "orders", `{"callback_url": "` + hook + `"} {}`, nil, 400, []string{"body"}, false},
		{"empty body", "orders", "", nil, 400, []string{"body"}, true},
		{"wrong type", "orders", obj{"callback_url": 42}, nil, 400, []string{"callback_url"}, true},
		{"content type", "orders", `{"callback_url": "` + hook + `"}`, []reqOption{contentType("text/plain")}, 415, nil, true},
		{"content type form", "orders", `callback_url=x`, []reqOption{contentType("application/x-www-form-urlencoded")}, 415, nil, true},
		{"body over 64 KiB", "orders", obj{"callback_url": hook, "headers": obj{"X-Pad": strings.Repeat(" ", 64<<10)}}, nil, 413, []string{"body"}, true},
		{"tenant param by non-admin", "orders?tenant=other", obj{"callback_url": hook}, nil, 403, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot(t)
			res := e.do(t, "PUT", "/v1/topics/"+tc.topic, acme, tc.body, tc.opts...)
			p := e.refused(t, res, before, tc.status, tc.fields, tc.spec)
			if tc.status == 400 && len(p.Errors) == 0 {
				t.Errorf("400 without field errors: %+v", p)
			}
		})
	}
	// The topic kept its settings through all of it.
	got := want[topicResponse](t, e.do(t, "GET", "/v1/topics/orders", acme, nil), http.StatusOK)
	if got.MaxAttempts != 3 || got.CallbackURL != hook {
		t.Errorf("topic changed: %+v", got)
	}
}

func manyHeaders(n int) obj {
	h := obj{}
	for i := range n {
		h["X-H"+strings.Repeat("a", i%5)+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	return h
}

// A topic's flow control settings are answered as set, and a PUT without
// them removes them.
func TestTopicFlowSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	got := want[topicResponse](t, e.do(t, "PUT", "/v1/topics/partner", acme, obj{"callback_url": hook,
		"rate": obj{"limit": 50, "period": "1m"}, "parallelism": 5, "flow_key": "partner-api:eu"}), http.StatusCreated)
	if got.Rate == nil || *got.Rate != (rateResponse{Limit: 50, Period: "1m0s"}) || got.Parallelism != 5 || got.FlowKey != "partner-api:eu" {
		t.Fatalf("flow settings answered %+v %+v", got, got.Rate)
	}
	got = want[topicResponse](t, e.do(t, "GET", "/v1/topics/partner", acme, nil), http.StatusOK)
	if got.Rate == nil || got.Rate.Limit != 50 || got.Parallelism != 5 || got.FlowKey != "partner-api:eu" {
		t.Fatalf("GET: %+v", got)
	}
	got = want[topicResponse](t, e.do(t, "PUT", "/v1/topics/partner", acme, obj{"callback_url": hook, "breaker": obj{}}), http.StatusOK)
	if got.Breaker != (breakerResponse{Failures: 5, Cooldown: "10s", State: "closed"}) {
		t.Fatalf("a breaker with its defaults: %+v", got.Breaker)
	}
	got = want[topicResponse](t, e.do(t, "PUT", "/v1/topics/partner", acme, obj{"callback_url": hook}), http.StatusOK)
	if got.Rate != nil || got.Parallelism != 0 || got.FlowKey != "" || got.Breaker != (breakerResponse{State: "closed"}) {
		t.Fatalf("a PUT without flow settings kept %+v", got)
	}
}

// A topic answer always carries breaker.state: "closed", with no settings,
// when no breaker is configured (PUT, GET, the list).
func TestTopicWithoutBreakerReadsClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	const closed = `"breaker":{"state":"closed"}`
	for _, res := range []result{
		e.do(t, "PUT", "/v1/topics/plain", acme, obj{"callback_url": hook}),
		e.do(t, "GET", "/v1/topics/plain", acme, nil),
		e.do(t, "GET", "/v1/topics", acme, nil),
	} {
		if !strings.Contains(string(res.Body), closed) {
			t.Errorf("%d %s: no %s", res.Status, res.Body, closed)
		}
	}
}

// Pause and resume answer the topic; GET, the list and a PUT show the
// pause; both are idempotent; an unknown topic is a 404 and another
// tenant's is not reachable.
func TestTopicPauseResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	other := e.token(t, "globex", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})

	for range 2 {
		if got := want[topicResponse](t, e.do(t, "POST", "/v1/topics/orders/pause", acme, nil), http.StatusOK); !got.Paused {
			t.Fatalf("pause answered %+v", got)
		}
	}
	if got := want[topicResponse](t, e.do(t, "GET", "/v1/topics/orders", acme, nil), http.StatusOK); !got.Paused {
		t.Errorf("GET after pause: %+v", got)
	}
	if got := want[topicResponse](t, e.do(t, "PUT", "/v1/topics/orders", acme, obj{"callback_url": hook + "/v2"}), http.StatusOK); !got.Paused {
		t.Errorf("PUT of a paused topic unpaused it: %+v", got)
	}
	list := want[struct{ Topics []topicResponse }](t, e.do(t, "GET", "/v1/topics", acme, nil), http.StatusOK)
	if len(list.Topics) != 1 || !list.Topics[0].Paused {
		t.Errorf("list after pause: %+v", list)
	}
	wantProblem(t, e.do(t, "POST", "/v1/topics/orders/resume", other, nil), http.StatusNotFound)
	for range 2 {
		if got := want[topicResponse](t, e.do(t, "POST", "/v1/topics/orders/resume", acme, nil), http.StatusOK); got.Paused {
			t.Fatalf("resume answered %+v", got)
		}
	}
	wantProblem(t, e.do(t, "POST", "/v1/topics/nope/pause", acme, nil), http.StatusNotFound)
}

// TestTopicDeleteAgainstCreates: a topic with a schedule, even a paused
// one, is not deleted; a create in a topic another process deleted (this
// server still has it cached) is a 404 that says so and stores nothing.
func TestTopicDeleteAgainstCreates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	res := e.do(t, "PUT", "/v1/topics/orders/schedules/nightly", acme, obj{"cron": "0 3 * * *", "paused": true})
	if res.Status != http.StatusCreated {
		t.Fatalf("put schedule: %d %s", res.Status, res.Body)
	}
	before := e.snapshot(t)
	p := e.refused(t, e.do(t, "DELETE", "/v1/topics/orders", acme, nil), before, http.StatusConflict, nil, false)
	if !strings.Contains(p.Detail, "1 schedules") {
		t.Errorf("detail %q does not count the schedule", p.Detail)
	}
	if res := e.do(t, "DELETE", "/v1/topics/orders/schedules/nightly", acme, nil); res.Status != http.StatusNoContent {
		t.Fatalf("delete schedule: %d %s", res.Status, res.Body)
	}

	e.createJob(t, acme, "orders", obj{"id": "warm", "delay": "1m"}) // the topic is now in this server's cache
	if res := e.do(t, "DELETE", "/v1/topics/orders/jobs/warm", acme, nil); res.Status != http.StatusNoContent {
		t.Fatalf("cancel: %d %s", res.Status, res.Body)
	}
	other := rdb.New(e.rc, rdb.Options{Prefix: e.prefix, Now: e.clock.Now})
	if err := other.DeleteTopic(context.Background(), "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	before = e.snapshot(t)
	p = e.refused(t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"delay": "1m"}), before, http.StatusNotFound, nil, false)
	if !strings.Contains(p.Detail, "was deleted") {
		t.Errorf("detail %q", p.Detail)
	}
	e.refused(t, e.do(t, "PUT", "/v1/topics/orders/schedules/s2", acme, obj{"every": "1h"}), before, http.StatusNotFound, nil, false)
	// registered again, it takes jobs again
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"delay": "1m"})
}
