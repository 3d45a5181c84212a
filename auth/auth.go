// Package auth checks the bearer JWTs of the kairos API and mints them.
// Tokens are HS256 only, signed with KAIROS_AUTH_SECRET; claim sub names the
// tenant and admin: true may see every tenant.
package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Identity is who a request acts for, and the token that says so.
type Identity struct {
	Tenant string
	Admin  bool
	// TokenID is the token's jti ("" when it has none); IssuedAt its iat
	// (zero when it has none). Revocations match them.
	TokenID  string
	IssuedAt time.Time
	// ExpiresAt is the token's exp (zero when it never expires): a token
	// it mints may not outlive it (Authenticator.Remaining).
	ExpiresAt time.Time
}

// Claims are the claims of a kairos API token.
type Claims struct {
	jwt.RegisteredClaims
	Admin bool `json:"admin,omitempty"`
}

// UnmarshalJSON reads claims by their exact names: encoding/json would
// take "ADMIN" or "Sub" for admin and sub, and a later "SUB" would replace
// sub. Claims of other names are ignored, as before.
func (c *Claims) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*c = Claims{}
	for _, f := range []struct {
		name string
		dst  any
	}{{"iss", &c.Issuer}, {"sub", &c.Subject}, {"aud", &c.Audience}, {"exp", &c.ExpiresAt},
		{"nbf", &c.NotBefore}, {"iat", &c.IssuedAt}, {"jti", &c.ID}, {"admin", &c.Admin}} {
		if raw, ok := m[f.name]; ok {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return fmt.Errorf("claim %s: %w", f.name, err)
			}
		}
	}
	return nil
}

// TenantPattern is what a tenant name (the token's sub) may look like.
var TenantPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// Error is an authentication failure; Reason is safe to show the caller.
type Error struct{ Reason string }

func (e *Error) Error() string { return e.Reason }

// ErrNoToken is returned when the request carries no bearer token.
var ErrNoToken = &Error{Reason: "missing bearer token: send Authorization: Bearer <JWT> (mint one with `kairos token --tenant NAME`)"}

// Authenticator verifies and mints tokens. It is safe for concurrent use.
type Authenticator struct {
	secret []byte
	parser *jwt.Parser
	now    func() time.Time

	mu       sync.Mutex
	verified map[string]verified // tokens that passed, by the token itself

	revoked atomic.Pointer[Revocations]
}

// Revocations are the tokens no longer accepted: every token of a tenant
// issued at or before a time (to the second: iat has whole seconds), and
// single tokens by their tenant and jti.
type Revocations struct {
	Before map[string]time.Time // tenant -> tokens issued at or before it (its second) are revoked
	// IDs are revoked tokens by RevokedID(tenant, jti); "/" + jti revokes
	// that jti whatever its tenant (revocations written before they were
	// scoped to their tenant).
	IDs map[string]bool
}

// RevokedID is the key of Revocations.IDs of the token of tenant whose
// jti is jti. A tenant name has no "/".
func RevokedID(tenant, jti string) string { return tenant + "/" + jti }

// revokes reports whether r revokes the token of id. A token without iat
// counts as issued before any time; one without jti matches no ID.
func (r *Revocations) revokes(id Identity) bool {
	if r == nil {
		return false
	}
	if id.TokenID != "" && (r.IDs[RevokedID(id.Tenant, id.TokenID)] || r.IDs["/"+id.TokenID]) {
		return true
	}
	t, ok := r.Before[id.Tenant]
	return ok && (id.IssuedAt.IsZero() || id.IssuedAt.Unix() <= t.Unix())
}

// SetRevocations replaces the revocations in force (a full read of the
// list kept in Redis). Safe for concurrent use with Authenticate.
func (a *Authenticator) SetRevocations(r Revocations) { a.revoked.Store(&r) }

// RevokeBefore revokes, in this process at once, tenant's tokens issued at
// or before t (its second); SetRevocations with the shared list later
// keeps it. A cutoff only moves forward: a t before the one in force
// changes nothing.
func (a *Authenticator) RevokeBefore(tenant string, t time.Time) {
	a.update(func(r *Revocations) {
		if old, ok := r.Before[tenant]; !ok || t.After(old) {
			r.Before[tenant] = t
		}
	})
}

// RevokeID revokes, in this process at once, tenant's token whose jti is
// id; another tenant's token with the same jti stays valid.
func (a *Authenticator) RevokeID(tenant, id string) {
	a.update(func(r *Revocations) { r.IDs[RevokedID(tenant, id)] = true })
}

func (a *Authenticator) update(f func(*Revocations)) {
	for {
		old := a.revoked.Load()
		next := &Revocations{Before: map[string]time.Time{}, IDs: map[string]bool{}}
		if old != nil {
			maps.Copy(next.Before, old.Before)
			maps.Copy(next.IDs, old.IDs)
		}
		f(next)
		if a.revoked.CompareAndSwap(old, next) {
			return
		}
	}
}

// errRevoked is the answer to a revoked token.
var errRevoked = &Error{Reason: "token has been revoked: ask an admin for a new one"}

// verified is a token that passed every check, trusted until until.
type verified struct {
	id    Identity
	until time.Time
}

const (
	leeway = 5 * time.Second
	// trustFor is how long a verified token is taken without checking its
	// signature again; never past its expiry (plus the leeway).
	trustFor = time.Minute
	// maxVerified bounds the cache; when full it starts again empty.
	maxVerified = 4096
)

// New returns an Authenticator for secret. now may be nil (time.Now).
func New(secret []byte, now func() time.Time) *Authenticator {
	if now == nil {
		now = time.Now
	}
	return &Authenticator{
		secret: secret,
		now:    now,
		// WithIssuedAt refuses a token issued in the future (past the
		// leeway): it would escape a cutoff (RevokeBefore) until then.
		parser: jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithTimeFunc(now), jwt.WithLeeway(leeway), jwt.WithIssuedAt()),
	}
}

// Token is a minted API token and the claims its holder keeps: its id
// (jti), which revokes it alone, and its expiry (zero: none).
type Token struct {
	Token     string
	ID        string
	ExpiresAt time.Time
}

// Mint returns a token for tenant; ttl 0 means it never expires, and a
// negative ttl is an error (it would otherwise mint a token without exp).
func (a *Authenticator) Mint(tenant string, admin bool, ttl time.Duration) (string, error) {
	t, err := a.MintToken(tenant, admin, ttl)
	return t.Token, err
}

// MintToken is Mint that also returns the token's id and expiry.
func (a *Authenticator) MintToken(tenant string, admin bool, ttl time.Duration) (Token, error) {
	if !TenantPattern.MatchString(tenant) {
		return Token{}, fmt.Errorf("tenant %q: use 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit", tenant)
	}
	if ttl < 0 {
		return Token{}, fmt.Errorf("ttl %s is negative", ttl)
	}
	now := a.now()
	var jti [16]byte
	rand.Read(jti[:])
	c := Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: tenant, IssuedAt: jwt.NewNumericDate(now),
		ID: base64.RawURLEncoding.EncodeToString(jti[:])}, Admin: admin}
	var exp time.Time
	if ttl > 0 {
		c.ExpiresAt = jwt.NewNumericDate(now.Add(ttl))
		exp = c.ExpiresAt.Time
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(a.secret)
	if err != nil {
		return Token{}, err
	}
	return Token{Token: tok, ID: c.ID, ExpiresAt: exp}, nil
}

// Remaining returns how long the token of id has left by the
// authenticator's clock (never below zero); ok is false when it never
// expires.
func (a *Authenticator) Remaining(id Identity) (d time.Duration, ok bool) {
	if id.ExpiresAt.IsZero() {
		return 0, false
	}
	return max(id.ExpiresAt.Sub(a.now()), 0), true
}

// Authenticate checks an Authorization header value. A token that passed
// is remembered for a minute (never past its expiry), so that a client
// sending the same token with every request pays for the HMAC and the JSON
// of its claims once.
func (a *Authenticator) Authenticate(header string) (Identity, error) {
	if header == "" {
		return Identity{}, ErrNoToken
	}
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return Identity{}, &Error{Reason: "malformed Authorization header: want \"Bearer <JWT>\""}
	}
	tok = strings.TrimSpace(tok)
	now := a.now()
	a.mu.Lock()
	v, hit := a.verified[tok]
	a.mu.Unlock()
	if hit && !now.After(v.until) {
		if a.revoked.Load().revokes(v.id) {
			return Identity{}, errRevoked
		}
		return v.id, nil
	}
	var c Claims
	_, err := a.parser.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return a.secret, nil })
	if err != nil {
		return Identity{}, &Error{Reason: reason(err)}
	}
	if c.Subject == "" {
		return Identity{}, &Error{Reason: "token has no sub claim: sub names the tenant"}
	}
	if !TenantPattern.MatchString(c.Subject) {
		return Identity{}, &Error{Reason: "token sub is not a valid tenant name: use 1-64 letters, digits, '.', '_', '@' or '-'"}
	}
	id := Identity{Tenant: c.Subject, Admin: c.Admin, TokenID: c.ID}
	if c.IssuedAt != nil {
		id.IssuedAt = c.IssuedAt.Time
	}
	if c.ExpiresAt != nil {
		id.ExpiresAt = c.ExpiresAt.Time
	}
	if a.revoked.Load().revokes(id) {
		return Identity{}, errRevoked
	}
	until := now.Add(trustFor)
	if c.ExpiresAt != nil && c.ExpiresAt.Add(leeway).Before(until) {
		until = c.ExpiresAt.Add(leeway)
	}
	a.mu.Lock()
	if a.verified == nil || len(a.verified) >= maxVerified {
		a.verified = make(map[string]verified)
	}
	a.verified[tok] = verified{id: id, until: until}
	a.mu.Unlock()
	return id, nil
}

// OtherSecretReason is the Reason of the Error for an HS256 token whose signature
// does not check out: most often one minted with another secret, such as a
// token kept from before a restart that generated a new secret.
const OtherSecretReason = "token signature is invalid: it was not signed with this server's KAIROS_AUTH_SECRET (the server may have restarted with a new secret)"

func reason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "token is malformed"
	case errors.Is(err, jwt.ErrTokenUnverifiable), errors.Is(err, jwt.ErrTokenSignatureInvalid) && strings.Contains(err.Error(), "signing method"):
		return "token algorithm not accepted: only HS256 is"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return OtherSecretReason
	case errors.Is(err, jwt.ErrTokenExpired):
		return "token has expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "token is not valid yet (nbf is in the future)"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "token was issued in the future"
	}
	return "token is invalid"
}

type ctxKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity stored by WithIdentity.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return id, ok
}
