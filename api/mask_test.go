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
		"X-Jwt": true, "X-Hmac": true, "X-Hmac-Sha256": true, "Jwt-Assertion": true, "X-Shopify-Hmac-Sha256": true, "Sessionid": true,
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
		"X-Jwt": "eyJhbGciOi.x.y", "X-Hmac": "ab12cd",
	}
	masked := map[string]string{
		"Authorization": headerMask, "X-Auth-Token": headerMask, "Cookie": headerMask,
		"X-Api-Key": headerMask, "X-Hub-Signature": headerMask, "X-Shop": "eu-1",
		"X-Jwt": headerMask, "X-Hmac": headerMask,
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
		[]string{"headers.Authorization", "headers.Cookie", "headers.X-Auth-Token", "headers.X-Api-Key", "headers.X-Hub-Signature", "headers.X-Hmac", "headers.X-Jwt"}, false)
	e.refused(t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"delay": "1m", "headers": obj{"Authorization": headerMask}}), before,
		http.StatusBadRequest, []string{"headers.Authorization"}, false)
}

func TestMaskURL(t *testing.T) {
	const m = headerMask
	for raw, want := range map[string]string{
		"":                                   "",
		"https://hooks.example.com/x":        "https://hooks.example.com/x",
		"https://h.example/x?token=abc":      "https://h.example/x?token=" + m,
		"https://h.example/x?a=1&sig=2&b=":   "https://h.example/x?a=" + m + "&sig=" + m + "&b=" + m,
		"https://h.example/x?s3cr3t":         "https://h.example/x?" + m,
		"https://h.example/x?":               "https://h.example/x?",
		"https://h.example/x?a=1&&b=2":       "https://h.example/x?a=" + m + "&&b=" + m,
		"https://h.example/x?k=a=b#frag":     "https://h.example/x?k=" + m + "#" + m,
		"https://h.example/x#access_token=z": "https://h.example/x#" + m,
		"https://h.example/x#?token=z":       "https://h.example/x#" + m,
	} {
		if got := maskURL(raw); got != want {
			t.Errorf("maskURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestURLQueriesMasked: every query value of a topic's, a job's and a
// schedule's callback, success and failure URLs is masked in answers
// (creates, reads, lists, dead letters), whatever the parameter's name;
// ?reveal=headers shows them in full, and a masked URL sent back is
// refused rather than stored over the real one.
func TestURLQueriesMasked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	const m = headerMask
	cb, fail, ok := hook+"?token=s3cr3t&team=eu", hook+"/dead?sig=d34d", hook+"/ok?k"
	masked := [3]string{hook + "?token=" + m + "&team=" + m, hook + "/dead?sig=" + m, hook + "/ok?" + m}
	urls := func(what string, got [3]string, want [3]string) {
		t.Helper()
		if got != want {
			t.Errorf("%s: callback, failure and success URLs %q, want %q", what, got, want)
		}
	}
	tv := func(v topicResponse) [3]string { return [3]string{v.CallbackURL, v.FailureURL, v.SuccessURL} }
	jv := func(v jobResponse) [3]string { return [3]string{v.CallbackURL, v.FailureURL, v.SuccessURL} }
	body := obj{"callback_url": cb, "failure_url": fail, "success_url": ok}

	urls("PUT topic", tv(e.putTopic(t, acme, "orders", body)), masked)
	urls("GET topic", tv(want[topicResponse](t, e.do(t, "GET", "/v1/topics/orders", acme, nil), http.StatusOK)), masked)
	list := want[struct{ Topics []topicResponse }](t, e.do(t, "GET", "/v1/topics", acme, nil), http.StatusOK)
	urls("GET topics", tv(list.Topics[0]), masked)
	urls("GET topic revealed", tv(want[topicResponse](t, e.do(t, "GET", "/v1/topics/orders?reveal=headers", acme, nil), http.StatusOK)), [3]string{cb, fail, ok})

	job := obj{"id": "j1", "delay": "1h", "callback_url": cb, "failure_url": fail, "success_url": ok}
	urls("create job", jv(e.createJob(t, acme, "orders", job)), masked)
	urls("GET job", jv(e.getJob(t, acme, "orders", "j1")), masked)
	jobs := want[struct{ Jobs []jobResponse }](t, e.do(t, "GET", "/v1/topics/orders/jobs", acme, nil), http.StatusOK)
	urls("GET jobs", jv(jobs.Jobs[0]), masked)
	urls("GET job revealed", jv(want[jobResponse](t, e.do(t, "GET", "/v1/topics/orders/jobs/j1?reveal=headers", acme, nil), http.StatusOK)), [3]string{cb, fail, ok})
	e.createJob(t, acme, "orders", obj{"id": "d1", "delay": "0s", "callback_url": cb, "failure_url": fail, "success_url": ok})
	e.deadJob(t, "acme", "orders", "d1")
	dead := want[struct{ Jobs []jobResponse }](t, e.do(t, "GET", "/v1/dead", acme, nil), http.StatusOK)
	urls("GET dead", jv(dead.Jobs[0]), masked)

	sc := want[scheduleResponse](t, e.do(t, "PUT", "/v1/topics/orders/schedules/beat", acme, obj{"every": "1h", "callback_url": cb}), http.StatusCreated)
	if sc.CallbackURL != masked[0] {
		t.Errorf("PUT schedule: callback_url %q, want %q", sc.CallbackURL, masked[0])
	}
	if sc = want[scheduleResponse](t, e.do(t, "GET", "/v1/topics/orders/schedules/beat?reveal=headers", acme, nil), http.StatusOK); sc.CallbackURL != cb {
		t.Errorf("GET schedule revealed: callback_url %q, want %q", sc.CallbackURL, cb)
	}

	before := e.snapshot(t)
	e.refused(t, e.do(t, "PUT", "/v1/topics/orders", acme, obj{"callback_url": masked[0], "failure_url": masked[1], "success_url": masked[2]}), before,
		http.StatusBadRequest, []string{"callback_url", "failure_url", "success_url"}, false)
	e.refused(t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"delay": "1m", "callback_url": masked[0]}), before,
		http.StatusBadRequest, []string{"callback_url"}, false)
}
