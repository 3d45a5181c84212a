package api

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMintToken: an admin mints a tenant token through POST /v1/tokens;
// it works for that tenant alone, expires after its ttl (24h by default),
// its jti revokes it, and the log names the jti, never the token.
func TestMintToken(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	e := newEnv(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	admin := e.tokenFor(t, "ops", true, 30*24*time.Hour)

	got := want[tokenResponse](t, e.do(t, "POST", "/v1/tokens", admin, obj{"tenant": "acme", "admin": false, "ttl": "2h"}), http.StatusCreated)
	if got.Token == "" || got.JTI == "" || got.ExpiresAt != ms(t0.Add(2*time.Hour)) {
		t.Fatalf("minted %+v, want a token, a jti and expires_at %s", got, ms(t0.Add(2*time.Hour)))
	}
	acme := "Bearer " + got.Token
	e.putTopic(t, acme, "orders", obj{"callback_url": "https://example.com/hook"})
	// a tenant token: it sees its own topic, is no admin, and cannot mint
	want[map[string]any](t, e.do(t, "GET", "/v1/topics/orders", acme, nil), http.StatusOK)
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders?tenant=other", acme, nil), http.StatusForbidden)
	wantProblem(t, e.do(t, "POST", "/v1/tokens", acme, obj{"tenant": "acme"}), http.StatusForbidden)

	if l := logs.take(); strings.Contains(l, got.Token) || strings.Contains(l, strings.Split(got.Token, ".")[2]) || !strings.Contains(l, got.JTI) {
		t.Errorf("the log must name the jti and never the token:\n%s", l)
	}

	def := want[tokenResponse](t, e.do(t, "POST", "/v1/tokens", admin, obj{"tenant": "acme"}), http.StatusCreated)
	if def.ExpiresAt != ms(t0.Add(24*time.Hour)) {
		t.Errorf("default expiry %s, want %s", def.ExpiresAt, ms(t0.Add(24*time.Hour)))
	}
	adm := want[tokenResponse](t, e.do(t, "POST", "/v1/tokens", admin, obj{"tenant": "ops2", "admin": true, "ttl": "1h"}), http.StatusCreated)
	want[map[string]any](t, e.do(t, "GET", "/v1/topics/orders?tenant=acme", "Bearer "+adm.Token, nil), http.StatusOK)

	// its jti revokes it alone
	want[revocationResponse](t, e.do(t, "POST", "/v1/tenants/acme/revocations", admin, obj{"jti": got.JTI}), http.StatusOK)
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders", acme, nil), http.StatusUnauthorized)
	want[map[string]any](t, e.do(t, "GET", "/v1/topics/orders", "Bearer "+def.Token, nil), http.StatusOK)

	// and it expires
	e.clock.Add(24*time.Hour + time.Minute)
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders", "Bearer "+def.Token, nil), http.StatusUnauthorized)
}

// TestMintTokenRefusals: bad requests are problem+json naming the field
// and what is allowed, refused by openapi.yaml too, and mint nothing.
func TestMintTokenRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	admin, acme := e.token(t, "ops", true), e.token(t, "acme", false)
	before := e.snapshot(t)
	for _, c := range []struct {
		name, authz string
		body        any
		status      int
		fields      []string
		spec        bool
		detail      string
	}{
		{"not an admin", acme, obj{"tenant": "acme"}, http.StatusForbidden, nil, false, "admin token"},
		{"no token", "", obj{"tenant": "acme"}, http.StatusUnauthorized, nil, false, ""},
		{"no tenant", admin, obj{"ttl": "1h"}, http.StatusBadRequest, []string{"tenant"}, true, "required"},
		{"empty tenant", admin, obj{"tenant": ""}, http.StatusBadRequest, []string{"tenant"}, true, "required"},
		{"bad tenant", admin, obj{"tenant": "a/b"}, http.StatusBadRequest, []string{"tenant"}, true, "letters, digits"},
		{"long tenant", admin, obj{"tenant": strings.Repeat("a", 65)}, http.StatusBadRequest, []string{"tenant"}, true, "1-64"},
		{"ttl zero", admin, obj{"tenant": "acme", "ttl": "0s"}, http.StatusBadRequest, []string{"ttl"}, false, "allowed"},
		{"ttl too long", admin, obj{"tenant": "acme", "ttl": "8761h"}, http.StatusBadRequest, []string{"ttl"}, false, "allowed"},
		{"ttl past the minter's life", admin, obj{"tenant": "acme", "ttl": "2h"}, http.StatusBadRequest, []string{"ttl"}, false,
			"2h is longer than allowed: at most 1h0m0s, what is left of the token that mints it"},
		{"ttl negative", admin, obj{"tenant": "acme", "ttl": "-1h"}, http.StatusBadRequest, []string{"ttl"}, false, "out of range"},
		{"ttl not a duration", admin, obj{"tenant": "acme", "ttl": "soon"}, http.StatusBadRequest, []string{"ttl"}, true, "not a duration"},
		{"admin not a bool", admin, obj{"tenant": "acme", "admin": "yes"}, http.StatusBadRequest, []string{"admin"}, true, ""},
		{"unknown field", admin, obj{"tenant": "acme", "scope": "x"}, http.StatusBadRequest, []string{"scope"}, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := e.refused(t, e.do(t, "POST", "/v1/tokens", c.authz, c.body), before, c.status, c.fields, c.spec)
			if !strings.Contains(p.Detail, c.detail) {
				t.Errorf("detail %q, want it to say %q", p.Detail, c.detail)
			}
		})
	}
}

// TestMintedTokensAreBounded: a minted token never outlives the token that
// minted it, and never lives past the server's cap (MaxTokenTTL): a ttl
// past either is a 400 naming ttl and the most allowed, and without a ttl
// the token lives 24h, or less when either bound is nearer.
func TestMintedTokensAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{MaxTokenTTL: 30 * 24 * time.Hour})
	minute := e.tokenFor(t, "ops", true, time.Minute)
	forever := e.tokenFor(t, "ops", true, 0) // `kairos token --ttl 0`: no exp
	year := e.tokenFor(t, "ops", true, 365*24*time.Hour)
	mint := func(authz string, body obj) result { return e.do(t, "POST", "/v1/tokens", authz, body) }
	expires := func(res result) string { return want[tokenResponse](t, res, http.StatusCreated).ExpiresAt }
	before := e.snapshot(t)

	// the probe's case: a 1-minute admin token asks for a 365-day admin token
	p := e.refused(t, mint(minute, obj{"tenant": "new-tenant", "admin": true, "ttl": "365d"}), before, http.StatusBadRequest, []string{"ttl"}, false)
	if msg := p.Errors[0].Message; !strings.Contains(msg, "at most 1m0s") || !strings.Contains(msg, "may not outlive") {
		t.Errorf("message %q, want the most allowed (1m) and why", msg)
	}
	for _, authz := range []string{forever, year} {
		p = e.refused(t, mint(authz, obj{"tenant": "acme", "ttl": "31d"}), before, http.StatusBadRequest, []string{"ttl"}, false)
		if msg := p.Errors[0].Message; !strings.Contains(msg, "at most 30d") || !strings.Contains(msg, "KAIROS_MAX_TOKEN_TTL") {
			t.Errorf("message %q, want the server's cap (30d) named", msg)
		}
	}

	if got := expires(mint(minute, obj{"tenant": "acme"})); got != ms(t0.Add(time.Minute)) {
		t.Errorf("a 1-minute minter's token without ttl expires at %s, want with it, %s", got, ms(t0.Add(time.Minute)))
	}
	if got := expires(mint(minute, obj{"tenant": "acme", "ttl": "1m"})); got != ms(t0.Add(time.Minute)) {
		t.Errorf("ttl 1m of a 1-minute minter: expires at %s, want %s", got, ms(t0.Add(time.Minute)))
	}
	if got := expires(mint(year, obj{"tenant": "acme", "ttl": "30d"})); got != ms(t0.Add(30*24*time.Hour)) {
		t.Errorf("ttl 30d: expires at %s, want %s", got, ms(t0.Add(30*24*time.Hour)))
	}
	if got := expires(mint(forever, obj{"tenant": "acme"})); got != ms(t0.Add(24*time.Hour)) {
		t.Errorf("without ttl: expires at %s, want 24h on, %s", got, ms(t0.Add(24*time.Hour)))
	}

	// 30 seconds before the minter expires, nothing can be minted with it
	e.clock.Add(30 * time.Second)
	before = e.snapshot(t)
	p = e.refused(t, mint(minute, obj{"tenant": "acme"}), before, http.StatusBadRequest, []string{"ttl"}, false)
	if msg := p.Errors[0].Message; !strings.Contains(msg, "at most 30s is allowed") {
		t.Errorf("message %q, want it to say at most 30s is left", msg)
	}
}
