package api

import (
	"net/http"
	"strings"
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

// TestRevocationsOnlyTighten: a second revocation with an earlier
// issued_before leaves the later cutoff in force and answers it; a jti
// revoked under another tenant's path leaves the token valid (revocations
// by jti are scoped to the path's tenant), and under its own revokes it;
// a non-admin is told that revoking tokens needs an admin.
func TestRevocationsOnlyTighten(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	admin := e.token(t, "ops", true)
	old := e.token(t, "acme", false)
	e.clock.Add(2 * time.Second)
	got := want[revocationResponse](t, e.do(t, "POST", "/v1/tenants/acme/revocations", admin, obj{}), http.StatusOK)
	if got.IssuedBefore != ms(t0.Add(2*time.Second)) {
		t.Fatalf("revocation %+v", got)
	}
	got = want[revocationResponse](t, e.do(t, "POST", "/v1/tenants/acme/revocations", admin, obj{"issued_before": ms(t0.Add(-time.Hour))}), http.StatusOK)
	if got.IssuedBefore != ms(t0.Add(2*time.Second)) {
		t.Errorf("an earlier cutoff answered %+v, want the one in force, %s", got, ms(t0.Add(2*time.Second)))
	}
	e.clock.Add(time.Second)
	wantProblem(t, e.do(t, "GET", "/v1/topics", old, nil), http.StatusUnauthorized)

	tok := e.token(t, "acme", false)
	id, err := e.auth.Authenticate(tok)
	if err != nil {
		t.Fatal(err)
	}
	want[revocationResponse](t, e.do(t, "POST", "/v1/tenants/globex/revocations", admin, obj{"jti": id.TokenID}), http.StatusOK)
	want[map[string]any](t, e.do(t, "GET", "/v1/topics", tok, nil), http.StatusOK)
	want[revocationResponse](t, e.do(t, "POST", "/v1/tenants/acme/revocations", admin, obj{"jti": id.TokenID}), http.StatusOK)
	wantProblem(t, e.do(t, "GET", "/v1/topics", tok, nil), http.StatusUnauthorized)

	p := wantProblem(t, e.do(t, "POST", "/v1/tenants/acme/revocations", e.token(t, "acme", false), obj{}), http.StatusForbidden)
	if !strings.Contains(p.Detail, "revoking tokens needs an admin token") || strings.Contains(p.Detail, "quota") {
		t.Errorf("a non-admin's revocation: %q", p.Detail)
	}
}
