package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// topicPath is /v1/topics/{topic} with more path segments, each escaped.
func topicPath(topic string, more ...string) string {
	var b strings.Builder
	b.WriteString("/v1/topics/")
	b.WriteString(url.PathEscape(topic))
	for _, s := range more {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// revealQuery is the query of a read that may reveal masked headers.
func (c *Client) revealQuery() url.Values {
	if c.reveal {
		return url.Values{"reveal": {"headers"}}
	}
	return nil
}

// ListTopics returns the tenant's topics by name (an admin's, without
// [WithTenant], every tenant's by tenant, then name).
func (c *Client) ListTopics(ctx context.Context) ([]Topic, error) {
	var out struct {
		Topics []Topic `json:"topics"`
	}
	_, err := c.do(ctx, get("/v1/topics", nil), &out)
	return out.Topics, err
}

// GetTopic returns the topic named name, with its defaults filled in.
func (c *Client) GetTopic(ctx context.Context, name string) (*Topic, error) {
	var t Topic
	if _, err := c.do(ctx, get(topicPath(name), c.revealQuery()), &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// PutTopic registers the topic named name, or replaces all its settings
// (zero fields go back to the defaults); created says which. A change
// reaches the topic's pending jobs. It is retried as the policy allows.
func (c *Client) PutTopic(ctx context.Context, name string, req TopicRequest) (t *Topic, created bool, err error) {
	r, err := jsonBody(http.MethodPut, topicPath(name), req, true)
	if err != nil {
		return nil, false, err
	}
	t = new(Topic)
	status, err := c.do(ctx, r, t)
	if err != nil {
		return nil, false, err
	}
	return t, status == http.StatusCreated, nil
}

// DeleteTopic deletes a topic that holds no pending or dead jobs; one that
// does is a conflict ([IsConflict]): cancel its jobs first.
// PauseTopic stops the topic's deliveries: its due jobs wait, with their
// due times and attempts, until ResumeTopic.
func (c *Client) PauseTopic(ctx context.Context, name string) (*Topic, error) {
	return c.pauseTopic(ctx, name, "pause")
}

// ResumeTopic lets a paused topic deliver again: the jobs it held fire,
// oldest due first.
func (c *Client) ResumeTopic(ctx context.Context, name string) (*Topic, error) {
	return c.pauseTopic(ctx, name, "resume")
}

func (c *Client) pauseTopic(ctx context.Context, name, verb string) (*Topic, error) {
	var t Topic
	if _, err := c.do(ctx, request{method: http.MethodPost, path: topicPath(name, verb), retry: true}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// GetTopicSigningKeys returns the current and next secrets of a topic that
// signs its callbacks with its own (Signing: SigningTopic). A topic signed
// with the tenant's secret is a conflict ([IsConflict]).
func (c *Client) GetTopicSigningKeys(ctx context.Context, topic string) (*SigningKeys, error) {
	var k SigningKeys
	if _, err := c.do(ctx, get(topicPath(topic, "signing-keys"), nil), &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// RotateTopicSigningKeys makes the topic's next secret current and draws a
// new next one. It is sent once: a repeat would rotate again.
func (c *Client) RotateTopicSigningKeys(ctx context.Context, topic string) (*SigningKeys, error) {
	var k SigningKeys
	if _, err := c.do(ctx, request{method: http.MethodPost, path: topicPath(topic, "signing-keys", "rotate")}, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	_, err := c.do(ctx, del(topicPath(name)), nil)
	return err
}
