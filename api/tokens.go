package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/kairos-sh/kairos/auth"
)

// Bounds of a minted token's ttl: through the API every token expires
// (a token without expiry needs KAIROS_AUTH_SECRET and `kairos token`).
const (
	defaultTokenTTL = 24 * time.Hour
	minTokenTTL     = time.Minute
	maxTokenTTL     = 365 * 24 * time.Hour
)

// tokenRequest is the body of POST /v1/tokens.
type tokenRequest struct {
	Tenant *string `json:"tenant"`
	Admin  bool    `json:"admin"`
	TTL    *string `json:"ttl"`
}

type tokenResponse struct {
	Token     string `json:"token"`
	JTI       string `json:"jti"`
	ExpiresAt string `json:"expires_at"`
}

// mintToken handles POST /v1/tokens (admins only): a token for a tenant,
// signed with the server's secret, so that no one else needs the secret.
// The log line names the tenant and the token's jti, never the token.
func (s *Server) mintToken(w http.ResponseWriter, r *http.Request) {
	if id, _ := auth.FromContext(r.Context()); !id.Admin {
		s.writeError(w, r, errorf(http.StatusForbidden, "minting tokens needs an admin token (admin: true)"))
		return
	}
	var req tokenRequest
	if err := decode(r, 4<<10, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	var fe fieldErrors
	switch {
	case req.Tenant == nil || *req.Tenant == "":
		fe.add("tenant", "required: the tenant the token acts for (its sub claim), 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit")
	case !auth.TenantPattern.MatchString(*req.Tenant):
		fe.add("tenant", "%q is not a valid tenant name: use 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit", *req.Tenant)
	}
	ttl := defaultTokenTTL
	if req.TTL != nil {
		ttl = parseDuration(&fe, "ttl", *req.TTL, minTokenTTL, maxTokenTTL)
	}
	if err := fe.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	tok, err := s.auth.MintToken(*req.Tenant, req.Admin, ttl)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("mint token: %w", err))
		return
	}
	s.log.Info("token minted", "tenant", *req.Tenant, "admin", req.Admin, "jti", tok.ID,
		"expires_at", formatTime(tok.ExpiresAt), "by", identityOf(r))
	writeJSON(w, http.StatusCreated, tokenResponse{Token: tok.Token, JTI: tok.ID, ExpiresAt: formatTime(tok.ExpiresAt)})
}
