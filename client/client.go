package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultUserAgent is the User-Agent of a client made without
// [WithUserAgent].
const DefaultUserAgent = "kairos-go-client/1"

// Client calls one kairos server. It is safe for concurrent use; [Client.With]
// derives clients with other settings that share its *http.Client.
type Client struct {
	base   string // scheme://host[:port][/path], no trailing slash
	token  string
	hc     *http.Client
	ua     string
	tenant string
	reveal bool
	retry  RetryPolicy
}

// Option sets something of a [Client].
type Option func(*Client)

// WithToken sends token as the bearer token of every call (an HS256 JWT,
// such as `kairos token --tenant NAME` prints).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient makes the calls with hc instead of [http.DefaultClient]:
// for timeouts, proxies or TLS settings. The per-call deadline comes from
// the context.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithUserAgent sets the User-Agent header (default [DefaultUserAgent]).
func WithUserAgent(ua string) Option { return func(c *Client) { c.ua = ua } }

// WithTenant makes an admin token act on one tenant (the tenant query
// parameter). A non-admin token may name only its own tenant. Without it,
// an admin's ListTopics, ListDead and GetStats cover every tenant.
func WithTenant(tenant string) Option { return func(c *Client) { c.tenant = tenant } }

// WithRevealedHeaders makes GetTopic, GetJob and GetSchedule show the
// values of secret-looking headers, and the query values of callback,
// success and failure URLs, in full instead of masked.
func WithRevealedHeaders() Option { return func(c *Client) { c.reveal = true } }

// WithRetryPolicy replaces [DefaultRetryPolicy]; zero fields keep their
// defaults, and Attempts: 1 turns retries off.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *Client) { c.retry = p.withDefaults() } }

// New returns a client of the kairos server at baseURL, such as
// "http://127.0.0.1:8080" (a path prefix is kept, for a server behind a
// reverse proxy).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("kairos URL %q: want http(s)://host[:port][/path]", baseURL)
	}
	c := &Client{base: u.String(), hc: http.DefaultClient, ua: DefaultUserAgent, retry: DefaultRetryPolicy}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// With returns a copy of c with opts applied, such as
// c.With(client.WithTenant("acme")).
func (c *Client) With(opts ...Option) *Client {
	d := *c
	for _, o := range opts {
		o(&d)
	}
	return &d
}

// URL returns the base URL the client calls.
func (c *Client) URL() string { return c.base }

// request is one API call.
type request struct {
	method string
	path   string // escaped, from the base URL on: /v1/topics/orders
	query  url.Values
	body   []byte // nil: no body
	retry  bool   // repeating it has no second effect
	// problemOut, when set, also receives a refusal's problem document,
	// read whole (up to maxProblemBody), for problems that carry more
	// than an Error holds (a batch whose every item failed).
	problemOut any
}

// maxProblemBody bounds a refusal read into a request's problemOut: a
// batch's 1000 results with their errors.
const maxProblemBody = 8 << 20

// get and del make requests that may be retried.
func get(path string, q url.Values) request {
	return request{method: http.MethodGet, path: path, query: q, retry: true}
}
func del(path string) request { return request{method: http.MethodDelete, path: path, retry: true} }

// jsonBody encodes v as a request body.
func jsonBody(method, path string, v any, retry bool) (request, error) {
	b, err := marshal(v)
	return request{method: method, path: path, body: b, retry: retry}, err
}

// do sends r, retrying it as the policy allows when r.retry is set, and
// decodes a 2xx answer into out (when not nil). It returns the status of
// the last answer.
func (c *Client) do(ctx context.Context, r request, out any) (int, error) {
	attempts := 1
	if r.retry {
		attempts = c.retry.Attempts
	}
	for n := 1; ; n++ {
		status, sent, err := c.send(ctx, r, out)
		if err == nil || n >= attempts {
			return status, err
		}
		wait, ok := c.retryWait(ctx, n, sent, err)
		if !ok {
			return status, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return status, fmt.Errorf("%w (retries ended: %w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// retryWait decides whether the n-th attempt's error err may be retried,
// and after what wait. unanswered means the attempt got no answer.
func (c *Client) retryWait(ctx context.Context, n int, unanswered bool, err error) (time.Duration, bool) {
	if ctx.Err() != nil {
		return 0, false
	}
	wait := c.retry.backoff(n)
	var e *Error
	switch {
	case errors.As(err, &e):
		if !retryableStatus(e.Status) || e.RetryAfter > c.retry.MaxRetryAfter {
			return 0, false
		}
		if e.RetryAfter > 0 {
			wait = e.RetryAfter
		}
	case !unanswered:
		return 0, false // an answer that could not be read: the call happened
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return 0, false
	}
	return wait, true
}

// send makes one attempt of r. unanswered is true when no answer came.
func (c *Client) send(ctx context.Context, r request, out any) (status int, unanswered bool, err error) {
	u := c.base + r.path
	q := r.query
	if c.tenant != "" && strings.HasPrefix(r.path, "/v1/") {
		q = cloneWith(q, "tenant", c.tenant)
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.ua)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, true, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		limit := int64(maxErrorBody)
		if r.problemOut != nil {
			limit = maxProblemBody
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
		if r.problemOut != nil {
			json.Unmarshal(b, r.problemOut) // a body that is not one leaves it as it was
		}
		return resp.StatusCode, false, errorFrom(resp, b)
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, false, fmt.Errorf("%s %s: read the answer (%d): %w", r.method, r.path, resp.StatusCode, err)
		}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // so that the connection is reused
	return resp.StatusCode, false, nil
}

// cloneWith returns a copy of q with key set to v.
func cloneWith(q url.Values, key, v string) url.Values {
	out := url.Values{}
	for k, vs := range q {
		out[k] = vs
	}
	out.Set(key, v)
	return out
}
