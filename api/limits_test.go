package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestBodyLimitsNameTheirSetting: a 413 says which limit applied and what
// sets it. A payload over KAIROS_MAX_PAYLOAD names the payload limit; a
// body over its route's limit names that limit and how it follows from the
// payload limit (a create's: plus room for the other fields; a batch's:
// per item), or says the route's limit is fixed.
func TestBodyLimitsNameTheirSetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	small := newEnv(t, Config{MaxPayload: 1000})
	acmeSmall := small.token(t, "acme", false)
	small.putTopic(t, acmeSmall, "orders", obj{"callback_url": hook})
	for _, tc := range []struct {
		name  string
		e     *env
		token string
		path  string
		body  string
		field string
		want  string
	}{
		{"a 300 KB payload", e, acme, "/v1/topics/orders/jobs", `{"payload": "` + strings.Repeat("x", 300_000) + `"}`, "payload",
			"payload is 300002 bytes; the payload limit is 262144 bytes (KAIROS_MAX_PAYLOAD or --max-payload)"},
		{"a 2 MB body", e, acme, "/v1/topics/orders/jobs", `{"payload": "` + strings.Repeat("x", 2_000_000) + `"}`, "body",
			"request body is larger than 327680 bytes, this route's body limit: the payload limit, 262144 bytes (KAIROS_MAX_PAYLOAD or --max-payload), plus 65536 bytes for the other fields"},
		{"a schedule's body", e, acme, "/v1/topics/orders/schedules/s", `{"every": "1h", "payload": "` + strings.Repeat("x", 400_000) + `"}`, "body",
			"request body is larger than 327680 bytes, this route's body limit: the payload limit, 262144 bytes (KAIROS_MAX_PAYLOAD or --max-payload)"},
		{"a batch's body", small, acmeSmall, "/v1/topics/orders/jobs/batch", `{"jobs": [{"payload": "` + strings.Repeat("x", 5_100_000) + `"}]}`, "body",
			"request body is larger than 5096000 bytes, a batch's body limit: 1000 items of the payload limit, 1000 bytes (KAIROS_MAX_PAYLOAD or --max-payload), plus 4096 bytes each, at most 33554432 bytes"},
		{"a fixed limit", e, acme, "/v1/topics/orders/jobs/x", `{"delay": "1m` + strings.Repeat(" ", 5000) + `"}`, "body",
			"request body is larger than 4096 bytes, this route's fixed body limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := "POST"
			switch {
			case strings.Contains(tc.path, "/schedules/"):
				method = "PUT"
			case strings.HasSuffix(tc.path, "/x"):
				method = "PATCH"
			}
			p := wantProblem(t, tc.e.do(t, method, tc.path, tc.token, tc.body), http.StatusRequestEntityTooLarge)
			if len(p.Errors) != 1 || p.Errors[0].Field != tc.field || !strings.HasPrefix(p.Errors[0].Message, tc.want) {
				t.Errorf("errors %+v, want one on %s starting %q", p.Errors, tc.field, tc.want)
			}
		})
	}
}
