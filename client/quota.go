package client

import (
	"context"
	"net/http"
	"net/url"
)

// Quota is a tenant's quota in force and its pending jobs.
type Quota struct {
	Tenant string `json:"tenant"`
	// MaxPending is the most pending jobs (scheduled, ready, active,
	// retrying) the tenant may hold; 0 is no limit.
	MaxPending int64 `json:"max_pending"`
	// Rate bounds the tenant's API requests; nil is no limit.
	Rate  *QuotaRate `json:"rate"`
	Burst int        `json:"burst,omitempty"` // requests that may come at once within Rate
	// Pending is the tenant's pending jobs now.
	Pending int64 `json:"pending"`
	// Custom is true when an admin set this tenant's quota, false for the
	// deployment's defaults.
	Custom bool `json:"custom"`
}

// QuotaRate is a request rate: Limit requests per Period.
type QuotaRate struct {
	Limit  int      `json:"limit"`
	Period Duration `json:"period,omitempty"`
}

// QuotaRequest sets a tenant's quota. A nil field takes the deployment's
// default; 0 is no limit.
type QuotaRequest struct {
	MaxPending *int64     `json:"max_pending,omitempty"`
	Rate       *QuotaRate `json:"rate,omitempty"`
	Burst      *int       `json:"burst,omitempty"`
}

func quotaPath(tenant string) string { return "/v1/tenants/" + url.PathEscape(tenant) + "/quota" }

// GetQuota returns a tenant's quota in force and its pending jobs. A
// tenant's token may read its own; an admin token any tenant's.
func (c *Client) GetQuota(ctx context.Context, tenant string) (*Quota, error) {
	var q Quota
	if _, err := c.do(ctx, get(quotaPath(tenant), nil), &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// PutQuota sets a tenant's quota (admin tokens only). Every kairos
// process applies it within a second. It is retried as the policy allows:
// a repeat sets the same.
func (c *Client) PutQuota(ctx context.Context, tenant string, req QuotaRequest) (*Quota, error) {
	r, err := jsonBody(http.MethodPut, quotaPath(tenant), req, true)
	if err != nil {
		return nil, err
	}
	var q Quota
	if _, err := c.do(ctx, r, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// DeleteQuota gives a tenant the deployment's default quota again (admin
// tokens only).
func (c *Client) DeleteQuota(ctx context.Context, tenant string) error {
	_, err := c.do(ctx, del(quotaPath(tenant)), nil)
	return err
}

// Revocation is a revocation of a tenant's tokens now in force.
type Revocation struct {
	Tenant       string `json:"tenant"`
	IssuedBefore *Time  `json:"issued_before,omitempty"` // every token issued in that second or earlier
	JTI          string `json:"jti,omitempty"`           // the one token revoked
}

// RevocationRequest revokes a tenant's tokens issued up to IssuedBefore
// (nil: now), or the one token whose jti is JTI.
type RevocationRequest struct {
	IssuedBefore *Time  `json:"issued_before,omitempty"`
	JTI          string `json:"jti,omitempty"`
}

// RevokeTokens revokes a tenant's tokens (admin tokens only): every kairos
// process refuses them within about a second. It is sent once.
func (c *Client) RevokeTokens(ctx context.Context, tenant string, req RevocationRequest) (*Revocation, error) {
	r, err := jsonBody(http.MethodPost, "/v1/tenants/"+url.PathEscape(tenant)+"/revocations", req, false)
	if err != nil {
		return nil, err
	}
	var v Revocation
	if _, err := c.do(ctx, r, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// TokenRequest asks for a token for Tenant (POST /v1/tokens); TTL zero is
// the server's default, 24h or less (allowed: 1m to the server's cap,
// KAIROS_MAX_TOKEN_TTL, and never past the expiry of the token that mints
// it).
type TokenRequest struct {
	Tenant string   `json:"tenant"`
	Admin  bool     `json:"admin"`
	TTL    Duration `json:"ttl,omitempty"`
}

// Token is a minted API token, its id (which revokes it alone) and its
// expiry.
type Token struct {
	Token     string `json:"token"`
	JTI       string `json:"jti"`
	ExpiresAt Time   `json:"expires_at"`
}

// MintToken mints a token for a tenant, signed with the server's secret
// (admin tokens only), so that no one but the server needs the secret. It
// is sent once.
func (c *Client) MintToken(ctx context.Context, req TokenRequest) (*Token, error) {
	r, err := jsonBody(http.MethodPost, "/v1/tokens", req, false)
	if err != nil {
		return nil, err
	}
	var t Token
	if _, err := c.do(ctx, r, &t); err != nil {
		return nil, err
	}
	return &t, nil
}
