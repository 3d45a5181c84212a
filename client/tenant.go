package client

import (
	"context"
	"net/http"
)

// GetSigningKeys returns the tenant's current and next callback signing
// secrets, creating them on first use.
func (c *Client) GetSigningKeys(ctx context.Context) (*SigningKeys, error) {
	var k SigningKeys
	if _, err := c.do(ctx, get("/v1/signing-keys", nil), &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// RotateSigningKeys makes the next secret current and draws a new next
// one, which receivers should learn before the following rotation. It is
// sent once: a repeat would rotate again.
func (c *Client) RotateSigningKeys(ctx context.Context) (*SigningKeys, error) {
	var k SigningKeys
	if _, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/signing-keys/rotate"}, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// GetStats returns per topic the jobs by state, the ready list's length,
// and the last minutes' deliveries, failures and lateness.
func (c *Client) GetStats(ctx context.Context) (*Stats, error) {
	var s Stats
	if _, err := c.do(ctx, get("/v1/stats", nil), &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Health checks that the server answers HTTP (GET /healthz); it needs no
// token.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.do(ctx, get("/healthz", nil), nil)
	return err
}

// Ready checks that the server reaches its Redis (GET /readyz): an [*Error]
// with status 503 when it does not.
func (c *Client) Ready(ctx context.Context) error {
	_, err := c.do(ctx, get("/readyz", nil), nil)
	return err
}
