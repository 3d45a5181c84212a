package api

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSecretHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Set-Cookie": true,
		"X-Api-Key": true, "Apikey": true, "X-Auth-Token": true, "X-Webhook-Secret": true, "X-Hub-Signature-256": true,
		"X-Password": true, "X-Passwd": true, "X-Session-Id": true, "X-Credentials": true, "x-access-TOKEN": true,
		"X-Shop": false, "X-Trace": false, "Accept": false, "X-Request-Id": false, "Content-Language": false,
	} {
		if got := secretHeader(name); got != want {
			t.Errorf("secretHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestSecretHeadersMasked: every answer that shows a topic's or a job's
// headers masks the secret-looking ones; GET with ?reveal=headers shows
// them in full to whoever may read the topic or job.
func TestSecretHeadersMasked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme, globex, admin := e.token(t, "acme", false), e.token(t, "globex", false), e.token(t, "ops", true)
	headers := map[string]string{
		"Authorization": "Bearer sk_live_4f9a", "X-Auth-Token": "t0k3n", "Cookie": "sid=abc",
		"X-Api-Key": "k-123456789", "X-Hub-Signature": "sha256=ff", "X-Shop": "eu-1",
	}
	masked := map[string]string{
		"Authorization": headerMask, "X-Auth-Token": headerMask, "Cookie": headerMask,
		"X-Api-Key": headerMask, "X-Hub-Signature": headerMask, "X-Shop": "eu-1",
	}
	check := func(what string, got map[string]string, want map[string]string) {
		t.Helper()
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: headers (-want +got):\n%s", what, d)
		}
	}

	check("PUT topic", e.putTopic(t, acme, "orders", obj{"callback_url": hook, "headers": headers}).Headers, masked)
	check("GET topic", want[topicResponse](t, e.do(t, "GET", "/v1/topics/orders", acme, nil), http.StatusOK).Headers, masked)
	list := want[struct{ Topics []topicResponse }](t, e.do(t, "GET", "/v1/topics", acme, nil), http.StatusOK)
	check("GET topics", list.Topics[0].Headers, masked)
	check("GET topic revealed", want[topicResponse](t, e.do(t, "GET", "/v1/topics/orders?reveal=headers", acme, nil), http.StatusOK).Headers, headers)
	check("GET topic revealed to an admin", want[topicResponse](t, e.do(t, "GET", "/v1/topics/orders?tenant=acme&reveal=headers", admin, nil), http.StatusOK).Headers, headers)
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders?reveal=headers", globex, nil), http.StatusNotFound)

	check("create job", e.createJob(t, acme, "orders", obj{"id": "j1", "delay": "1h", "headers": headers}).Headers, masked)
	check("GET job", e.getJob(t, acme, "orders", "j1").Headers, masked)
	check("GET job revealed", want[jobResponse](t, e.do(t, "GET", "/v1/topics/orders/jobs/j1?reveal=headers", acme, nil), http.StatusOK).Headers, headers)
	check("GET job revealed to an admin", want[jobResponse](t, e.do(t, "GET", "/v1/topics/orders/jobs/j1?tenant=acme&reveal=headers", admin, nil), http.StatusOK).Headers, headers)
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders/jobs/j1?reveal=headers", globex, nil), http.StatusNotFound)
	check("reschedule", want[jobResponse](t, e.do(t, "PATCH", "/v1/topics/orders/jobs/j1", acme, obj{"delay": "2h"}), http.StatusOK).Headers, masked)
	batch := want[batchResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, obj{"jobs": []any{obj{"delay": "1h", "headers": headers}}}), http.StatusCreated)
	check("batch result", batch.Results[0].Job.Headers, masked)

	// Masking changes only what is shown: the stored values stay whole.
	if tp, _ := e.store.GetTopic(t.Context(), "acme", "orders"); !cmp.Equal(tp.Headers, headers) {
		t.Errorf("stored topic headers %v", tp.Headers)
	}

	before := e.snapshot(t)
	for _, path := range []string{"/v1/topics/orders?reveal=all", "/v1/topics/orders/jobs/j1?reveal=payload"} {
		e.refused(t, e.do(t, "GET", path, acme, nil), before, http.StatusBadRequest, []string{"reveal"}, true)
	}
	// A masked value sent back (a GET's answer edited and PUT) would
	// overwrite the secret with the mask: it is refused.
	back := obj{"callback_url": hook, "headers": masked}
	e.refused(t, e.do(t, "PUT", "/v1/topics/orders", acme, back), before, http.StatusBadRequest,
		[]string{"headers.Authorization", "headers.Cookie", "headers.X-Auth-Token", "headers.X-Api-Key", "headers.X-Hub-Signature"}, false)
	e.refused(t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"delay": "1m", "headers": obj{"Authorization": headerMask}}), before,
		http.StatusBadRequest, []string{"headers.Authorization"}, false)
}
