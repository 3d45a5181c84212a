package client

import (
	"context"
	"net/http"
	"time"
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

// TickRequest asks a tick of For (zero: the server's default, 55s).
type TickRequest struct {
	For Duration `json:"for,omitempty"`
}

// TickSummary is what a tick did (POST /v1/tick).
type TickSummary struct {
	Delivered int `json:"delivered"` // attempts that delivered their job
	Failed    int `json:"failed"`    // attempts that failed
	Dead      int `json:"dead"`      // of the failed, jobs that are dead now
	InFlight  int `json:"in_flight"` // callbacks still running when the time was up
	// NextDue: no job in the shards the tick scanned is due before it; nil
	// when they hold nothing.
	NextDue *Time   `json:"next_due"`
	Shards  int     `json:"shards"`  // shards the tick scanned
	Seconds float64 `json:"seconds"` // how long it ran
}

// Tick makes the server run its scanner and workers for at most d (zero:
// its default, 55s) and deliver what is due, for platforms that can only
// call a URL on a schedule; it answers when the tick is over. It needs an
// admin token, and is sent once. Give ctx (and the HTTP client) a deadline
// longer than d.
func (c *Client) Tick(ctx context.Context, d time.Duration) (*TickSummary, error) {
	req, err := jsonBody(http.MethodPost, "/v1/tick", TickRequest{For: Duration(d)}, false)
	if err != nil {
		return nil, err
	}
	var s TickSummary
	if _, err := c.do(ctx, req, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
