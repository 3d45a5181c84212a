package api

import (
	"net/http"
	"strings"
	"testing"
)

// privateURLs are callback URLs refused at registration unless the server
// allows private targets.
var privateURLs = []string{
	"http://127.0.0.1:8080/hook", "http://[::1]/hook", "http://10.0.0.7/hook", "http://192.168.1.20/hook",
	"http://169.254.169.254/latest/meta-data/", "http://[fe80::1%25eth0]/", "http://0.0.0.0/", "http://127.1/",
	"http://localhost:9000/hook", "http://api.localhost/hook",
}

// TestPrivateCallbacksRefused: a topic, a job and a batch item whose
// callback URL is a literal private address or localhost are refused with
// a 400 naming the field and the setting that allows them, and nothing is
// written.
func TestPrivateCallbacksRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	checkMessage := func(t *testing.T, p Problem) {
		t.Helper()
		if len(p.Errors) != 1 {
			return
		}
		msg := p.Errors[0].Message
		if !strings.Contains(msg, "refused") || !strings.Contains(msg, "KAIROS_ALLOW_PRIVATE_URLS=1") || !strings.Contains(msg, "--allow-private-urls") {
			t.Errorf("message %q does not say why, nor how to allow it", msg)
		}
	}
	for _, u := range privateURLs {
		t.Run(u, func(t *testing.T) {
			before := e.snapshot(t)
			for _, topic := range []string{"orders", "fresh"} {
				p := e.refused(t, e.do(t, "PUT", "/v1/topics/"+topic, acme, obj{"callback_url": u}), before, 400, []string{"callback_url"}, false)
				checkMessage(t, p)
				p = e.refused(t, e.do(t, "POST", "/v1/topics/"+topic+"/jobs", acme, obj{"delay": "1m", "callback_url": u}), before, 400, []string{"callback_url"}, false)
				checkMessage(t, p)
			}
			res := e.do(t, "POST", "/v1/topics/fresh/jobs/batch", acme, obj{"jobs": []any{obj{"delay": "1m", "callback_url": u}}})
			got := wantBatchFailed(t, res, http.StatusBadRequest)
			if it := got.Results[0]; it.Status != 400 || it.Error == nil {
				t.Fatalf("batch item: %+v", it)
			} else {
				wantFields(t, *it.Error, "jobs[0].callback_url")
				checkMessage(t, *it.Error)
			}
			e.unchanged(t, before)
		})
	}
	// Names are not resolved at registration: what they resolve to is
	// checked when the callback is dialled.
	for _, u := range []string{"http://kairos-test.invalid/hook", "http://localhost.example.com/hook"} {
		e.putTopic(t, acme, "named", obj{"callback_url": u})
		e.createJob(t, acme, "named", obj{"delay": "1m", "callback_url": u})
	}
}

// TestPrivateCallbacksAllowed: with AllowPrivate (KAIROS_ALLOW_PRIVATE_URLS=1)
// the same URLs are registered.
func TestPrivateCallbacksAllowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{AllowPrivate: true})
	acme := e.token(t, "acme", false)
	for _, u := range privateURLs {
		e.putTopic(t, acme, "orders", obj{"callback_url": u})
		e.createJob(t, acme, "orders", obj{"delay": "1m", "callback_url": u})
		got := want[batchResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, obj{"jobs": []any{obj{"delay": "1m", "callback_url": u}}}), http.StatusCreated)
		if got.Created != 1 {
			t.Errorf("%s: batch %+v", u, got)
		}
	}
}
