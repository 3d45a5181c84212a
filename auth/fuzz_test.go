package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzAuthenticate feeds Authorization headers to Authenticate: it never
// panics, refuses with a reason, and accepts only valid tenants. A token
// minted for the fuzzed tenant reads back as that tenant.
func FuzzAuthenticate(f *testing.F) {
	now := t0.Unix()
	for _, h := range []string{
		"", "Bearer", "Bearer ", "bearer x", "Basic Zm9vOmJhcg==", "Bearer a.b.c", "Bearer ..", "Bearer e30.e30.",
		"Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhY21lIn0.",
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme"}, secret),
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "ops", "admin": true, "exp": now + 60}, secret),
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme", "exp": now - 60}, secret),
		"Bearer " + sign(f, jwt.SigningMethodHS512, jwt.MapClaims{"sub": "acme"}, secret),
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme", "nbf": 1e300, "exp": -1e300}, secret),
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "", "admin": 1}, secret),
		"Bearer " + strings.Repeat("A", 4096),
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme", "jti": "n3oZIMcafZyF8Segdv8SnQ", "iat": now}, secret),
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme", "jti": 42, "iat": "yesterday"}, secret),
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme", "jti": "", "iat": -1e300}, secret),
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme", "ADMIN": true, "Admin": true}, secret),
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"SUB": "acme", "Exp": 1, "IAT": now + 3600}, secret),
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme", "iat": now + 3600}, secret),
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme", "iat": 1e300}, secret),
		"Bearer " + sign(f, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme", "aud": []any{"x", 1}}, secret),
		"Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhY21lIiwic3ViIjoiZ2xvYmV4In0.x",
	} {
		f.Add(h, "acme", false, int64(3600))
	}
	f.Add("Bearer \x00", "a.b_c@d-e", true, int64(0))
	f.Add("BEARER  x ", "-bad", true, int64(-5))
	f.Add("Bearer x", strings.Repeat("t", 64), false, int64(1<<40))
	f.Fuzz(func(t *testing.T, header, tenant string, admin bool, ttl int64) {
		a := New(secret, func() time.Time { return t0 })
		id, err := a.Authenticate(header)
		if err != nil {
			var ae *Error
			if !errors.As(err, &ae) || ae.Reason == "" {
				t.Fatalf("error %T %v, want an *auth.Error with a reason", err, err)
			}
			if id != (Identity{}) {
				t.Errorf("identity %+v with an error", id)
			}
		} else if !TenantPattern.MatchString(id.Tenant) {
			t.Errorf("accepted tenant %q", id.Tenant)
		} else if claims := exactClaims(header); claims != nil && (id.Admin != (claims["admin"] == true) || id.Tenant != claims["sub"]) {
			t.Errorf("identity %+v from claims %v: admin and tenant must come from \"admin\" and \"sub\" exactly", id, claims)
		}

		d := time.Duration(ttl) * time.Second
		if d/time.Second != time.Duration(ttl) {
			return // overflow
		}
		tok, err := a.Mint(tenant, admin, d)
		valid := TenantPattern.MatchString(tenant) && d >= 0
		if err != nil {
			if valid {
				t.Fatalf("Mint(%q, %s): %v", tenant, d, err)
			}
			return
		}
		if !valid {
			t.Fatalf("Mint accepted tenant %q, ttl %s", tenant, d)
		}
		got, err := a.Authenticate("Bearer " + tok)
		if err != nil {
			t.Fatalf("minted token for %q (ttl %s) refused: %v", tenant, d, err)
		}
		if got.Tenant != tenant || got.Admin != admin || got.TokenID == "" || !got.IssuedAt.Equal(t0) {
			t.Errorf("identity %+v, want tenant %q, admin %v, a jti, iat %s", got, tenant, admin, t0)
		}
		if d > 0 {
			later := New(secret, func() time.Time { return t0.Add(d + 6*time.Second) })
			if _, err := later.Authenticate("Bearer " + tok); err == nil {
				t.Errorf("token with ttl %s accepted %s after its expiry", d, 6*time.Second)
			}
		}
	})
}

// exactClaims returns the claims of the token in header by their exact
// names, or nil when they do not decode.
func exactClaims(header string) map[string]any {
	parts := strings.Split(strings.TrimSpace(header[min(len(header), len("Bearer ")):]), ".")
	if len(parts) != 3 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}
