package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// apiClient calls the kairos API as one tenant.
type apiClient struct {
	base  string
	token string
	hc    *http.Client
}

func newAPIClient(base, token string, conns int) *apiClient {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * conns,
		MaxIdleConnsPerHost: 2 * conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &apiClient{base: strings.TrimRight(base, "/"), token: token, hc: &http.Client{Transport: tr, Timeout: 2 * time.Minute}}
}

func (c *apiClient) close() { c.hc.CloseIdleConnections() }

// do sends one request and returns the status and the body.
func (c *apiClient) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// apiError describes an unexpected answer.
func apiError(method, path string, status int, body []byte) error {
	const max = 300
	if len(body) > max {
		body = append(body[:max:max], "..."...)
	}
	return fmt.Errorf("%s %s: status %d: %s", method, path, status, bytes.TrimSpace(body))
}

func topicPath(topic string) string { return "/v1/topics/" + url.PathEscape(topic) }

// putTopic registers the bench's topic: its callbacks go to the receiver.
func (c *apiClient) putTopic(ctx context.Context, topic, callbackURL string, concurrency int) error {
	body, _ := json.Marshal(map[string]any{"callback_url": callbackURL, "concurrency": concurrency, "timeout": "10s", "max_attempts": 3})
	p := topicPath(topic)
	st, raw, err := c.do(ctx, http.MethodPut, p, body)
	if err != nil {
		return err
	}
	if st != http.StatusOK && st != http.StatusCreated {
		return apiError("PUT", p, st, raw)
	}
	return nil
}

func (c *apiClient) deleteTopic(ctx context.Context, topic string) error {
	p := topicPath(topic)
	st, raw, err := c.do(ctx, http.MethodDelete, p, nil)
	if err != nil {
		return err
	}
	if st != http.StatusNoContent && st != http.StatusNotFound {
		return apiError("DELETE", p, st, raw)
	}
	return nil
}

// create sends one create call: a single job, or a batch when batch is set.
// Every job must be created.
func (c *apiClient) create(ctx context.Context, topic string, body []byte, batch bool) error {
	p := topicPath(topic) + "/jobs"
	if batch {
		p += "/batch"
	}
	st, raw, err := c.do(ctx, http.MethodPost, p, body)
	if err != nil {
		return err
	}
	if st != http.StatusCreated {
		return apiError("POST", p, st, raw)
	}
	return nil
}

// cancel cancels a job; one that is gone or already delivered is fine.
func (c *apiClient) cancel(ctx context.Context, topic, id string) error {
	p := topicPath(topic) + "/jobs/" + url.PathEscape(id)
	st, raw, err := c.do(ctx, http.MethodDelete, p, nil)
	if err != nil {
		return err
	}
	if st != http.StatusNoContent && st != http.StatusNotFound && st != http.StatusConflict {
		return apiError("DELETE", p, st, raw)
	}
	return nil
}
