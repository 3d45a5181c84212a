package api

import (
	"net/http"
	"testing"
	"time"
)

// TestRevokeTokens: an admin revokes a tenant's tokens by time or one by
// its jti, refused at once by this process; bad requests and non-admins
// are refused and change nothing.
func TestRevokeTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme, admin := e.token(t, "acme", false), e.token(t, "ops", true)
	want[map[string]any](t, e.do(t, "GET", "/v1/topics", acme, nil), http.StatusOK)

	before := e.snapshot(t)
	for _, c := range []struct {
		name, authz string
		body        any
		status      int
		fields      []string
	}{
		{"not an admin", acme, obj{}, http.StatusForbidden, nil},
		{"both", admin, obj{"jti": "x", "issued_before": ms(t0)}, http.StatusBadRequest, []string{"jti"}},
		{"empty jti", admin, obj{"jti": ""}, http.StatusBadRequest, []string{"jti"}},
		{"bad time", admin, obj{"issued_before": "yesterday"}, http.StatusBadRequest, []string{"issued_before"}},
		{"future", admin, obj{"issued_before": ms(t0.Add(time.Hour))}, http.StatusBadRequest, []string{"issued_before"}},
		{"unknown field", admin, obj{"before": ms(t0)}, http.StatusBadRequest, []string{"before"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.refused(t, e.do(t, "POST", "/v1/tenants/acme/revocations", c.authz, c.body), before, c.status, c.fields, false)
		})
	}

	got := want[revocationResponse](t, e.do(t, "POST", "/v1/tenants/acme/revocations", admin, obj{}), http.StatusOK)
	if got.Tenant != "acme" || got.IssuedBefore != ms(t0) {
		t.Errorf("revocation %+v", got)
	}
	p := wantProblem(t, e.do(t, "GET", "/v1/topics", acme, nil), http.StatusUnauthorized)
	if p.Detail != "token has been revoked: ask an admin for a new one" {
		t.Errorf("detail %q", p.Detail)
	}
	want[map[string]any](t, e.do(t, "GET", "/v1/topics", admin, nil), http.StatusOK) // another tenant's token
	e.clock.Add(time.Second)
	fresh := e.token(t, "acme", false)
	want[map[string]any](t, e.do(t, "GET", "/v1/topics", fresh, nil), http.StatusOK)
}
