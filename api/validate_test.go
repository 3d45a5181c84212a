package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestProxyHeadersRefused: Proxy-Authorization and every other Proxy-*
// header is refused in a topic's, a job's (batch items too) and a
// schedule's headers, with a 400 that names the field and the header;
// nothing is stored.
func TestProxyHeadersRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	before := e.snapshot(t)
	for _, name := range []string{"Proxy-Authorization", "proxy-authorization", "Proxy-Authenticate", "Proxy-Status", "Proxy-X"} {
		h := obj{name: "Basic cHJveHk6cHc=", "X-Shop": "eu-1"}
		for _, req := range []struct {
			method, path string
			body         obj
			field        string
		}{
			{"PUT", "/v1/topics/orders", obj{"callback_url": hook, "headers": h}, "headers." + name},
			{"PUT", "/v1/topics/fresh", obj{"callback_url": hook, "headers": h}, "headers." + name},
			{"POST", "/v1/topics/orders/jobs", obj{"delay": "1h", "headers": h}, "headers." + name},
			{"PUT", "/v1/topics/orders/schedules/beat", obj{"every": "1h", "headers": h}, "headers." + name},
			{"POST", "/v1/topics/orders/jobs/batch", obj{"jobs": []any{obj{"delay": "1h", "headers": h}}}, "jobs[0].headers." + name},
		} {
			p := e.refused(t, e.do(t, req.method, req.path, acme, req.body, specLenient()), before, http.StatusBadRequest, nil, false)
			if req.field == "jobs[0].headers."+name { // every item failed: the first item's error says why
				if len(p.Detail) == 0 || !strings.Contains(p.Detail, "Proxy-") {
					t.Errorf("%s %s with %s: detail %q does not name the header", req.method, req.path, name, p.Detail)
				}
				continue
			}
			wantFields(t, p, req.field)
			if len(p.Errors) == 1 && !strings.Contains(p.Errors[0].Message, http.CanonicalHeaderKey(name)) {
				t.Errorf("%s %s with %s: message %q does not name the header", req.method, req.path, name, p.Errors[0].Message)
			}
		}
	}
}
