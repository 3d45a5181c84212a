package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/kairos-sh/kairos/auth"
)

// Bounds of a minted token's ttl: through the API every token expires
// (a token without expiry needs KAIROS_AUTH_SECRET and `kairos token`), at
// the latest when the token that minted it does, and never later than
// Config.MaxTokenTTL from now.
const (
	defaultTokenTTL = 24 * time.Hour
	minTokenTTL     = time.Minute
	// DefaultMaxTokenTTL is the default of Config.MaxTokenTTL.
	DefaultMaxTokenTTL = 90 * 24 * time.Hour
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
	if err := s.decode(w, r, 4<<10, &req); err != nil {
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
	ttl := s.tokenTTL(&fe, r, req.TTL)
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

// tokenTTL is the ttl of a token minted by r's token: ttl as asked, or by
// default 24h, within [1m, most] where most is the server's cap
// (MaxTokenTTL) or, when sooner, what is left of r's token, which a token
// it mints may not outlive. A ttl past most is refused, not cut: the
// error names the most allowed and why.
func (s *Server) tokenTTL(fe *fieldErrors, r *http.Request, ttl *string) time.Duration {
	most, why := s.cfg.MaxTokenTTL, "the server's cap (KAIROS_MAX_TOKEN_TTL)"
	id, _ := auth.FromContext(r.Context())
	if left, ok := s.auth.Remaining(id); ok && left < most {
		most, why = left.Truncate(time.Second), "what is left of the token that mints it, which a minted token may not outlive"
	}
	if most < minTokenTTL {
		fe.add("ttl", "a minted token lives at least %s, but at most %s is allowed: %s; mint with a token that lives longer", fmtDuration(minTokenTTL), fmtDuration(most), why)
		return 0
	}
	if ttl == nil {
		return min(defaultTokenTTL, most)
	}
	d, ok := parseAnyDuration(fe, "ttl", *ttl)
	switch {
	case !ok:
	case d < minTokenTTL:
		fe.add("ttl", "%s is out of range: allowed %s to %s", *ttl, fmtDuration(minTokenTTL), fmtDuration(most))
	case d > most:
		fe.add("ttl", "%s is longer than allowed: at most %s, %s", *ttl, fmtDuration(most), why)
	}
	return d
}
