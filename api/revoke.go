package api

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// revocationRequest is the body of POST /v1/tenants/{tenant}/revocations:
// issued_before or jti; neither is issued_before now.
type revocationRequest struct {
	IssuedBefore *string `json:"issued_before"`
	JTI          *string `json:"jti"`
}

type revocationResponse struct {
	Tenant       string `json:"tenant"`
	IssuedBefore string `json:"issued_before,omitempty"`
	JTI          string `json:"jti,omitempty"`
}

// revokedFresh is how old this process's copy of the revoked tokens may
// be when it checks a token: a revocation through any process is in force
// on every other within about this (plus a round trip).
const revokedFresh = 500 * time.Millisecond

// revokedSync keeps this process's copy of the revoked tokens (held by
// the Authenticator) fresh. It is driven by requests: a request that finds
// the copy older than revokedFresh reads the list's version (one HGET) and,
// when it changed, the list (one HGETALL). So a busy process pays one small
// round trip about twice a second, not one a request, and an idle one sends
// Redis nothing and holds no subscription.
type revokedSync struct {
	mu      sync.Mutex
	checked time.Time // on the monotonic clock
	version int64
}

// syncRevoked brings this process's copy of the revoked tokens up to date
// when it is older than revokedFresh. When Redis does not answer, the copy
// is kept (and tried again after revokedFresh): the request goes on, and
// fails on its own if it needs Redis.
func (s *Server) syncRevoked(ctx context.Context) {
	rs := &s.revoked
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !rs.checked.IsZero() && time.Since(rs.checked) < revokedFresh {
		return
	}
	rs.checked = time.Now()
	v, err := s.store.RevokedVersion(ctx)
	if err == nil && v != rs.version {
		var r rdb.Revoked
		if r, err = s.store.LoadRevoked(ctx); err == nil {
			s.auth.SetRevocations(auth.Revocations{Before: r.Before, IDs: r.IDs})
			rs.version = r.Version
		}
	}
	if err != nil {
		s.log.Warn("read revoked tokens; keeping the copy in memory", "err", err)
	}
}

// revocationLeeway is how far in the future issued_before may be: clocks differ.
const revocationLeeway = 5 * time.Second

// revokeTokens handles POST /v1/tenants/{tenant}/revocations (admins only).
// The revocation is in force in this process at once and in every other
// within about revokedFresh (syncRevoked).
func (s *Server) revokeTokens(w http.ResponseWriter, r *http.Request) {
	tenant, err := s.revocationTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req revocationRequest
	if err := s.decode(w, r, 4<<10, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	now := s.store.Now()
	var fe fieldErrors
	before := now
	switch {
	case req.IssuedBefore != nil && req.JTI != nil:
		fe.add("jti", "give either issued_before (every token of the tenant issued until then) or jti (one token), not both")
	case req.JTI != nil:
		if n := len(*req.JTI); n < 1 || n > 128 {
			fe.add("jti", "%d characters: a token id (the jti claim `kairos token` prints) has 1 to 128", n)
		}
	case req.IssuedBefore != nil:
		t, err := time.Parse(time.RFC3339Nano, *req.IssuedBefore)
		switch {
		case err != nil:
			fe.add("issued_before", "%q is not an RFC 3339 time such as \"2026-11-21T10:30:00Z\"", *req.IssuedBefore)
		case t.After(now.Add(revocationLeeway)):
			fe.add("issued_before", "%s is in the future: tokens not issued yet cannot be revoked (now is %s)", formatTime(t), formatTime(now))
		default:
			before = t
		}
	}
	if err := fe.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := revocationResponse{Tenant: tenant}
	if req.JTI != nil {
		// scoped to the tenant of the path: a token of another tenant
		// with this jti stays valid
		err = s.store.RevokeID(r.Context(), tenant, *req.JTI)
		s.auth.RevokeID(tenant, *req.JTI)
		resp.JTI = *req.JTI
	} else {
		// a cutoff only moves forward: the answer names the one in force,
		// later than before when an earlier revocation asked for more
		if before, err = s.store.RevokeBefore(r.Context(), tenant, before); err == nil {
			s.auth.RevokeBefore(tenant, before)
		}
		resp.IssuedBefore = formatTime(before.Truncate(time.Second))
	}
	if err != nil {
		s.writeError(w, r, fmt.Errorf("revoke tokens of %s: %w", tenant, err))
		return
	}
	s.log.Info("tokens revoked", "tenant", tenant, "issued_before", resp.IssuedBefore, "by", identityOf(r))
	writeJSON(w, http.StatusOK, resp)
}

// revocationTarget returns the tenant named in the path of a revocation;
// only an admin may revoke tokens.
func (s *Server) revocationTarget(r *http.Request) (string, error) {
	tenant := chi.URLParam(r, "tenant")
	if !auth.TenantPattern.MatchString(tenant) {
		return "", &ValidationError{Errors: []FieldError{{Field: "tenant", Message: fmt.Sprintf("%q is not a valid tenant name: use 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit", tenant)}}}
	}
	if id, _ := auth.FromContext(r.Context()); !id.Admin {
		return "", errorf(http.StatusForbidden, "revoking tokens needs an admin token (admin: true); ask an admin to revoke a token that leaked")
	}
	return tenant, nil
}

// identityOf names the caller for a log line: its tenant, never its token.
func identityOf(r *http.Request) string {
	id, _ := auth.FromContext(r.Context())
	return id.Tenant
}
