package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/kairos-sh/kairos/auth"
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

// revocationLeeway is how far in the future issued_before may be: clocks differ.
const revocationLeeway = 5 * time.Second

// revokeTokens handles POST /v1/tenants/{tenant}/revocations (admins only).
// The revocation is in force in this process at once and in every other
// within about a second (pub/sub; internal/rdb WatchRevoked).
func (s *Server) revokeTokens(w http.ResponseWriter, r *http.Request) {
	tenant, err := s.quotaTarget(r, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req revocationRequest
	if err := decode(r, 4<<10, &req); err != nil {
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
		err = s.store.RevokeID(r.Context(), *req.JTI)
		s.auth.RevokeID(*req.JTI)
		resp.JTI = *req.JTI
	} else {
		err = s.store.RevokeBefore(r.Context(), tenant, before)
		s.auth.RevokeBefore(tenant, before)
		resp.IssuedBefore = formatTime(before.Truncate(time.Second))
	}
	if err != nil {
		s.writeError(w, r, fmt.Errorf("revoke tokens of %s: %w", tenant, err))
		return
	}
	s.log.Info("tokens revoked", "tenant", tenant, "issued_before", resp.IssuedBefore, "by", identityOf(r))
	writeJSON(w, http.StatusOK, resp)
}

// identityOf names the caller for a log line: its tenant, never its token.
func identityOf(r *http.Request) string {
	id, _ := auth.FromContext(r.Context())
	return id.Tenant
}
