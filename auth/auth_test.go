package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos/internal/testclock"
)

var (
	secret = []byte("test-secret-of-at-least-32-bytes!!")
	t0     = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
)

func sign(tb testing.TB, m jwt.SigningMethod, claims jwt.MapClaims, key any) string {
	tb.Helper()
	tok, err := jwt.NewWithClaims(m, claims).SignedString(key)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// forge builds a token with any header and claims and a junk signature.
func forge(tb testing.TB, header, claims map[string]any) string {
	tb.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(header) + "." + enc(claims) + "." + base64.RawURLEncoding.EncodeToString([]byte("junk"))
}

func TestAuthenticateRefuses(t *testing.T) {
	t.Parallel()
	a := New(secret, func() time.Time { return t0 })
	now := t0.Unix()
	c := func(kv ...any) jwt.MapClaims {
		m := jwt.MapClaims{"sub": "acme", "iat": now}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	hs := func(claims jwt.MapClaims) string { return "Bearer " + sign(t, jwt.SigningMethodHS256, claims, secret) }
	tests := []struct {
		name   string
		header string
		reason string
	}{
		{"empty", "", ErrNoToken.Reason},
		{"scheme only", "Bearer", `malformed Authorization header: want "Bearer <JWT>"`},
		{"blank token", "Bearer   ", `malformed Authorization header: want "Bearer <JWT>"`},
		{"basic", "Basic YWNtZTpwdw==", `malformed Authorization header: want "Bearer <JWT>"`},
		{"token without scheme", sign(t, jwt.SigningMethodHS256, c(), secret), `malformed Authorization header: want "Bearer <JWT>"`},
		{"tab separator", "Bearer\t" + sign(t, jwt.SigningMethodHS256, c(), secret), `malformed Authorization header: want "Bearer <JWT>"`},
		{"two parts", "Bearer abc.def", "token is malformed"},
		{"bad base64", "Bearer !!!.???.***", "token is malformed"},
		{"claims not JSON", "Bearer eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.c2ln", "token is malformed"},
		{"alg none", "Bearer " + sign(t, jwt.SigningMethodNone, c(), jwt.UnsafeAllowNoneSignatureType), "token algorithm not accepted: only HS256 is"},
		{"alg none forged", "Bearer " + forge(t, map[string]any{"alg": "none"}, c()), "token algorithm not accepted: only HS256 is"},
		{"HS384", "Bearer " + sign(t, jwt.SigningMethodHS384, c(), secret), "token algorithm not accepted: only HS256 is"},
		{"HS512", "Bearer " + sign(t, jwt.SigningMethodHS512, c(), secret), "token algorithm not accepted: only HS256 is"},
		{"RS256", "Bearer " + forge(t, map[string]any{"alg": "RS256", "typ": "JWT"}, c()), "token algorithm not accepted: only HS256 is"},
		{"ES256", "Bearer " + forge(t, map[string]any{"alg": "ES256"}, c()), "token algorithm not accepted: only HS256 is"},
		{"no alg", "Bearer " + forge(t, map[string]any{"typ": "JWT"}, c()), "token algorithm not accepted: only HS256 is"},
		{"other secret", hs2(t, c(), []byte("some other secret, also 32 bytes")), OtherSecretReason},
		{"junk signature", "Bearer " + forge(t, map[string]any{"alg": "HS256"}, c()), OtherSecretReason},
		{"expired", hs(c("exp", now-6)), "token has expired"},
		{"expired long ago", hs(c("exp", now-86400)), "token has expired"},
		{"not valid yet", hs(c("nbf", now+6)), "token is not valid yet (nbf is in the future)"},
		{"exp not a number", hs(c("exp", "tomorrow")), "token is malformed"},
		{"admin not a bool", hs(c("admin", "true")), "token is malformed"},
		{"no sub", hs(c("sub", nil)), "token has no sub claim: sub names the tenant"},
		{"empty sub", hs(c("sub", "")), "token has no sub claim: sub names the tenant"},
		{"sub with slash", hs(c("sub", "acme/ops")), "token sub is not a valid tenant name: use 1-64 letters, digits, '.', '_', '@' or '-'"},
		{"sub too long", hs(c("sub", strings.Repeat("a", 65))), "token sub is not a valid tenant name: use 1-64 letters, digits, '.', '_', '@' or '-'"},
		{"sub not a string", hs(c("sub", 42)), "token is malformed"},
		// a token issued in the future would escape a revocation cutoff until then
		{"iat in the future", hs(c("iat", now+3600)), "token was issued in the future"},
		{"iat past the leeway", hs(c("iat", now+6)), "token was issued in the future"},
		// claims are matched by their exact names
		{"SUB for sub", hs(c("sub", nil, "SUB", "acme")), "token has no sub claim: sub names the tenant"},
		{"Sub for sub", hs(c("sub", nil, "Sub", "acme")), "token has no sub claim: sub names the tenant"},
		{"EXP not read as exp, ADMIN not a bool", hs(c("ADMIN", "true", "exp", now-6)), "token has expired"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := a.Authenticate(tc.header)
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("Authenticate = %+v, %v; want an *auth.Error", id, err)
			}
			if ae.Reason != tc.reason {
				t.Errorf("reason %q, want %q", ae.Reason, tc.reason)
			}
			if id != (Identity{}) {
				t.Errorf("identity %+v with an error", id)
			}
		})
	}
}

func hs2(tb testing.TB, claims jwt.MapClaims, key []byte) string {
	tb.Helper()
	return "Bearer " + sign(tb, jwt.SigningMethodHS256, claims, key)
}

func TestAuthenticateAccepts(t *testing.T) {
	t.Parallel()
	a := New(secret, func() time.Time { return t0 })
	now := t0.Unix()
	tests := []struct {
		name   string
		header string
		want   Identity
	}{
		{"plain", hs2(t, jwt.MapClaims{"sub": "acme"}, secret), Identity{Tenant: "acme"}},
		{"admin", hs2(t, jwt.MapClaims{"sub": "ops", "admin": true}, secret), Identity{Tenant: "ops", Admin: true}},
		{"admin false", hs2(t, jwt.MapClaims{"sub": "ops", "admin": false}, secret), Identity{Tenant: "ops"}},
		{"exp within leeway", hs2(t, jwt.MapClaims{"sub": "acme", "exp": now - 4}, secret), Identity{Tenant: "acme", ExpiresAt: time.Unix(now-4, 0)}},
		{"nbf within leeway", hs2(t, jwt.MapClaims{"sub": "acme", "nbf": now + 4}, secret), Identity{Tenant: "acme"}},
		{"iat within leeway", hs2(t, jwt.MapClaims{"sub": "acme", "iat": now + 4}, secret), Identity{Tenant: "acme"}},
		// claims are matched by their exact names: only "admin" makes an admin
		{"ADMIN is not admin", hs2(t, jwt.MapClaims{"sub": "acme", "ADMIN": true}, secret), Identity{Tenant: "acme"}},
		{"Admin is not admin", hs2(t, jwt.MapClaims{"sub": "acme", "Admin": true, "admin": false}, secret), Identity{Tenant: "acme"}},
		{"SUB does not replace sub", hs2(t, jwt.MapClaims{"sub": "acme", "SUB": "globex"}, secret), Identity{Tenant: "acme"}},
		{"JTI is not jti", hs2(t, jwt.MapClaims{"sub": "acme", "JTI": "x"}, secret), Identity{Tenant: "acme"}},
		{"lowercase scheme", "bearer " + sign(t, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme"}, secret), Identity{Tenant: "acme"}},
		{"extra spaces", "Bearer   " + sign(t, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme"}, secret) + "  ", Identity{Tenant: "acme"}},
		{"unknown claims", hs2(t, jwt.MapClaims{"sub": "a.b_c@d-e", "scope": "x"}, secret), Identity{Tenant: "a.b_c@d-e"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.Authenticate(tc.header)
			if err != nil {
				t.Fatal(err)
			}
			got.IssuedAt = time.Time{} // these tokens' iat, where set, is checked below
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("identity (-want +got):\n%s", d)
			}
		})
	}
}

// TestMintRoundTrip mints tokens and reads them back, with the clock moved
// across the expiry: a token remembered as verified is refused once it
// expires, also when that is sooner than the minute it is remembered for.
func TestMintRoundTrip(t *testing.T) {
	t.Parallel()
	clk := testclock.New(t0)
	a := New(secret, clk.Now)
	for _, tc := range []struct {
		tenant string
		admin  bool
		ttl    time.Duration
	}{{"acme", false, time.Hour}, {"ops", true, time.Minute}, {"brief", false, 10 * time.Second}, {"forever", false, 0}} {
		clk.Set(t0)
		tok, err := a.Mint(tc.tenant, tc.admin, tc.ttl)
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.Authenticate("Bearer " + tok)
		if err != nil {
			t.Fatalf("%s: %v", tc.tenant, err)
		}
		if len(got.TokenID) != 22 {
			t.Errorf("jti %q, want 22 characters of base64url (128 random bits)", got.TokenID)
		}
		want := Identity{Tenant: tc.tenant, Admin: tc.admin, TokenID: got.TokenID, IssuedAt: t0}
		if tc.ttl > 0 {
			want.ExpiresAt = t0.Add(tc.ttl)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("identity (-want +got):\n%s", d)
		}
		left, ok := a.Remaining(got)
		if ok != (tc.ttl > 0) || left != tc.ttl {
			t.Errorf("Remaining = %s, %t; want %s, %t", left, ok, tc.ttl, tc.ttl > 0)
		}
		var c Claims
		if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err != nil {
			t.Fatal(err)
		}
		if c.Subject != tc.tenant || c.Admin != tc.admin || !c.IssuedAt.Time.Equal(t0) {
			t.Errorf("claims %+v", c)
		}
		// Past its expiry (and the leeway) the token is refused; without a
		// ttl it has no exp and never expires.
		clk.Set(t0.Add(tc.ttl + 6*time.Second))
		if tc.ttl == 0 {
			clk.Set(t0.Add(100 * 365 * 24 * time.Hour))
			if c.ExpiresAt != nil {
				t.Errorf("ttl 0 token has exp %v", c.ExpiresAt)
			}
			if _, err := a.Authenticate("Bearer " + tok); err != nil {
				t.Errorf("ttl 0 token refused a century later: %v", err)
			}
			continue
		}
		if !c.ExpiresAt.Time.Equal(t0.Add(tc.ttl)) {
			t.Errorf("exp %v, want %v", c.ExpiresAt, t0.Add(tc.ttl))
		}
		if _, err := a.Authenticate("Bearer " + tok); err == nil || err.Error() != "token has expired" {
			t.Errorf("expired token: %v", err)
		}
	}
	// Another secret does not accept the token.
	tok, _ := a.Mint("acme", false, time.Hour)
	if _, err := New([]byte("another secret"), clk.Now).Authenticate("Bearer " + tok); err == nil {
		t.Error("a token minted with one secret passed with another")
	}
}

func TestMintRefusesBadTenant(t *testing.T) {
	t.Parallel()
	a := New(secret, nil)
	for _, tenant := range []string{"", "-acme", "acme/ops", "acme ops", strings.Repeat("a", 65), "ä"} {
		if tok, err := a.Mint(tenant, false, time.Hour); err == nil {
			t.Errorf("Mint(%q) = %q, want an error", tenant, tok)
		}
	}
}

func TestIdentityContext(t *testing.T) {
	t.Parallel()
	if id, ok := FromContext(context.Background()); ok || id != (Identity{}) {
		t.Errorf("empty context: %+v %v", id, ok)
	}
	want := Identity{Tenant: "acme", Admin: true}
	got, ok := FromContext(WithIdentity(context.Background(), want))
	if !ok || got != want {
		t.Errorf("FromContext = %+v %v, want %+v", got, ok, want)
	}
}

func TestMintRefusesNegativeTTL(t *testing.T) {
	t.Parallel()
	if tok, err := New(secret, nil).Mint("acme", false, -time.Second); err == nil {
		t.Errorf("Mint with a negative ttl = %q, want an error (it had no exp and never expired)", tok)
	}
}

func BenchmarkAuthenticate(b *testing.B) {
	a := New(secret, nil)
	tok, err := a.Mint("acme", false, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate("Bearer " + tok); err != nil {
			b.Fatal(err)
		}
	}
}
