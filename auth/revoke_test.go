package auth

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kairos-sh/kairos/internal/testclock"
)

// TestRevocations: a tenant's tokens issued at or before a revocation's
// second are refused, remembered ones included; later ones, other
// tenants' and unrevoked ids pass; a revoked jti is refused alone, and only
// for the tenant it was revoked under; an earlier cutoff undoes nothing.
func TestRevocations(t *testing.T) {
	t.Parallel()
	clk := testclock.New(t0)
	a := New(secret, clk.Now)
	mint := func(tenant string) string {
		t.Helper()
		tok, err := a.Mint(tenant, false, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + tok
	}
	old, other := mint("acme"), mint("globex")
	clk.Add(1500 * time.Millisecond)
	sameSecond := mint("acme") // iat t0+1s: the revocation's second
	clk.Add(time.Second)
	later := mint("acme") // iat t0+2s
	noIat := "Bearer " + sign(t, jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acme"}, secret)
	for _, h := range []string{old, other, sameSecond, later, noIat} {
		if _, err := a.Authenticate(h); err != nil { // now remembered as verified
			t.Fatal(err)
		}
	}
	a.RevokeBefore("acme", t0.Add(1900*time.Millisecond))
	for name, h := range map[string]string{"issued before": old, "issued in the same second": sameSecond, "without iat": noIat} {
		if _, err := a.Authenticate(h); err == nil || err.Error() != errRevoked.Reason {
			t.Errorf("%s: %v, want revoked", name, err)
		}
	}
	for name, h := range map[string]string{"issued after": later, "another tenant's": other} {
		if _, err := a.Authenticate(h); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	id, _ := a.Authenticate(later)
	a.RevokeID("globex", id.TokenID) // under another tenant: not this token
	if _, err := a.Authenticate(later); err != nil {
		t.Errorf("a jti revoked for another tenant revoked acme's token: %v", err)
	}
	a.RevokeID("acme", id.TokenID)
	if _, err := a.Authenticate(later); err == nil {
		t.Error("a token revoked by its jti passed")
	}
	// an earlier cutoff does not undo a later one
	a.RevokeBefore("acme", t0.Add(-time.Hour))
	if _, err := a.Authenticate(old); err == nil {
		t.Error("an earlier cutoff let a token revoked by a later one pass")
	}
	if _, err := a.Authenticate(other); err != nil {
		t.Errorf("another token: %v", err)
	}
	// a full read of the shared list replaces the local one
	a.SetRevocations(Revocations{})
	if _, err := a.Authenticate(old); err != nil {
		t.Errorf("after the list was emptied: %v", err)
	}
	// a jti revoked by an older kairos, not scoped to a tenant
	a.SetRevocations(Revocations{IDs: map[string]bool{"/" + id.TokenID: true}})
	if _, err := a.Authenticate(later); err == nil {
		t.Error("a token revoked by an unscoped jti passed")
	}
}
