package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// SubscriptionRequest is the body of PutSubscription: an endpoint of the
// topic's fan-out, what it receives and how its deliveries fire. Settings
// left zero take the topic's (Method, Timeout, MaxAttempts, Backoff) or
// none (headers, limits, breaker).
type SubscriptionRequest struct {
	URL string `json:"url"`
	// EventTypes lists the message event types it receives; nil: all.
	EventTypes []string `json:"event_types,omitempty"`
	// Filter is matched against each message's payload (a JSON object
	// of dotted paths to literals or operators); nil: none.
	Filter json.RawMessage `json:"filter,omitempty"`
	CallbackSettings
	Rate        *Rate           `json:"rate,omitempty"`
	Parallelism int             `json:"parallelism,omitempty"`
	Breaker     *BreakerRequest `json:"breaker,omitempty"`
	// Paused pauses or resumes it with the put; nil leaves it as it is.
	Paused      *bool  `json:"paused,omitempty"`
	Description string `json:"description,omitempty"`
	// Signing is SigningTopic (the default: signed as the topic signs) or
	// SigningSubscription, a secret of its own
	// (GetSubscriptionSigningKeys).
	Signing string `json:"signing,omitempty"`
}

// SigningSubscription signs a subscription's deliveries with a secret of
// its own (SubscriptionRequest.Signing).
const SigningSubscription = "subscription"

// SubscriptionCounts are a subscription's deliveries: pending (published,
// not yet ended), delivered, and dead now.
type SubscriptionCounts struct {
	Pending   int64 `json:"pending"`
	Delivered int64 `json:"delivered"`
	Dead      int64 `json:"dead"`
}

// Subscription is a subscription as the server shows it.
type Subscription struct {
	Name       string          `json:"name"`
	Topic      string          `json:"topic"`
	Tenant     string          `json:"tenant"`
	URL        string          `json:"url"`
	EventTypes []string        `json:"event_types,omitempty"`
	Filter     json.RawMessage `json:"filter,omitempty"`
	CallbackSettings
	Rate        *Rate              `json:"rate,omitempty"`
	Parallelism int                `json:"parallelism,omitempty"`
	Breaker     Breaker            `json:"breaker"`
	Paused      bool               `json:"paused"`
	Description string             `json:"description,omitempty"`
	Signing     string             `json:"signing"`
	Counts      SubscriptionCounts `json:"counts"`
	CreatedAt   Time               `json:"created_at"`
	UpdatedAt   Time               `json:"updated_at"`
}

// SubscriptionDeleted answers DeleteSubscription: the bulk operation that
// cancels its pending deliveries (GetOperation), "" when the server
// cancelled them before answering.
type SubscriptionDeleted struct {
	Subscription string `json:"subscription"`
	Operation    string `json:"operation,omitempty"`
}

func subscriptionPath(topic, sub string, more ...string) string {
	return topicPath(topic, append([]string{"subscriptions", sub}, more...)...)
}

// PutSubscription registers or replaces a subscription of topic (and
// registers the topic when it has none); created says which. A filter
// that does not parse is a validation error naming its path.
func (c *Client) PutSubscription(ctx context.Context, topic, name string, req SubscriptionRequest) (s *Subscription, created bool, err error) {
	r, err := jsonBody(http.MethodPut, subscriptionPath(topic, name), req, true)
	if err != nil {
		return nil, false, err
	}
	s = new(Subscription)
	status, err := c.do(ctx, r, s)
	if err != nil {
		return nil, false, err
	}
	return s, status == http.StatusCreated, nil
}

// GetSubscription reads a subscription, with its counts and breaker state.
func (c *Client) GetSubscription(ctx context.Context, topic, name string) (*Subscription, error) {
	var s Subscription
	if _, err := c.do(ctx, get(subscriptionPath(topic, name), c.revealQuery()), &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListSubscriptions returns a topic's subscriptions by name.
func (c *Client) ListSubscriptions(ctx context.Context, topic string) ([]Subscription, error) {
	var out struct {
		Subscriptions []Subscription `json:"subscriptions"`
	}
	if _, err := c.do(ctx, get(topicPath(topic, "subscriptions"), nil), &out); err != nil {
		return nil, err
	}
	return out.Subscriptions, nil
}

// DeleteSubscription deletes a subscription; its pending deliveries are
// cancelled by the bulk operation it answers.
func (c *Client) DeleteSubscription(ctx context.Context, topic, name string) (*SubscriptionDeleted, error) {
	var d SubscriptionDeleted
	if _, err := c.do(ctx, del(subscriptionPath(topic, name)), &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// PauseSubscription stops a subscription's deliveries until
// ResumeSubscription; the topic's other subscriptions go on.
func (c *Client) PauseSubscription(ctx context.Context, topic, name string) (*Subscription, error) {
	return c.pauseSubscription(ctx, topic, name, "pause")
}

// ResumeSubscription lets a paused subscription deliver again: the
// deliveries it set aside are filed at their times before it returns.
func (c *Client) ResumeSubscription(ctx context.Context, topic, name string) (*Subscription, error) {
	return c.pauseSubscription(ctx, topic, name, "resume")
}

func (c *Client) pauseSubscription(ctx context.Context, topic, name, action string) (*Subscription, error) {
	var s Subscription
	if _, err := c.do(ctx, request{method: http.MethodPost, path: subscriptionPath(topic, name, action), retry: true}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// GetSubscriptionSigningKeys returns the own secrets of a subscription
// that signs with them (signing: subscription).
func (c *Client) GetSubscriptionSigningKeys(ctx context.Context, topic, name string) (*SigningKeys, error) {
	var k SigningKeys
	if _, err := c.do(ctx, get(subscriptionPath(topic, name, "signing-keys"), nil), &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// RotateSubscriptionSigningKeys makes the subscription's next secret
// current and draws a new next one. It is sent once: a repeat would
// rotate again.
func (c *Client) RotateSubscriptionSigningKeys(ctx context.Context, topic, name string) (*SigningKeys, error) {
	var k SigningKeys
	if _, err := c.do(ctx, request{method: http.MethodPost, path: subscriptionPath(topic, name, "signing-keys", "rotate")}, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// MessageRequest is a message to publish: its deliveries fire at RunAt,
// after Delay, or now.
type MessageRequest struct {
	ID          string            `json:"id,omitempty"`
	EventType   string            `json:"event_type,omitempty"`
	Payload     json.RawMessage   `json:"payload,omitempty"`
	RunAt       *Time             `json:"run_at,omitempty"`
	Delay       Duration          `json:"delay,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	DedupKey    string            `json:"dedup_key,omitempty"`
	DedupWindow Duration          `json:"dedup_window,omitempty"`
	TTL         Duration          `json:"ttl,omitempty"`
	ExpiresAt   *Time             `json:"expires_at,omitempty"`
	Priority    int               `json:"priority,omitempty"`
}

// DeliveryRef names a message's delivery to one subscription: a job of
// the topic.
type DeliveryRef struct {
	Subscription string `json:"subscription"`
	JobID        string `json:"job_id"`
}

// Published answers Publish. Result is "duplicate" when a message with
// the same dedup key was published within its window: nothing was.
type Published struct {
	ID         string        `json:"id"`
	Topic      string        `json:"topic"`
	RunAt      Time          `json:"run_at,omitzero"`
	Deliveries []DeliveryRef `json:"deliveries"`
	Result     string        `json:"result,omitempty"`
}

// Delivery is a message's delivery and its job's state (State is empty
// once the job's record is gone).
type Delivery struct {
	Subscription string   `json:"subscription"`
	JobID        string   `json:"job_id"`
	State        State    `json:"state,omitempty"`
	Attempts     int      `json:"attempts"`
	NextRunAt    Time     `json:"next_run_at,omitzero"`
	DoneAt       Time     `json:"done_at,omitzero"`
	LastAttempt  *Attempt `json:"last_attempt,omitempty"`
}

// Message is a published message with its deliveries.
type Message struct {
	ID         string            `json:"id"`
	Topic      string            `json:"topic"`
	Tenant     string            `json:"tenant"`
	EventType  string            `json:"event_type,omitempty"`
	Payload    json.RawMessage   `json:"payload,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	RunAt      Time              `json:"run_at"`
	CreatedAt  Time              `json:"created_at"`
	Deliveries []Delivery        `json:"deliveries"`
}

// Publish publishes a message to topic: each subscription it matches now
// gets a delivery. It is sent once unless req names an ID or a DedupKey,
// with which a repeat publishes nothing new.
func (c *Client) Publish(ctx context.Context, topic string, req MessageRequest) (*Published, error) {
	r, err := jsonBody(http.MethodPost, topicPath(topic, "messages"), req, req.ID != "" || req.DedupKey != "")
	if err != nil {
		return nil, err
	}
	var p Published
	if _, err := c.do(ctx, r, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GetMessage reads a message and each delivery's state.
func (c *Client) GetMessage(ctx context.Context, topic, id string) (*Message, error) {
	var m Message
	if _, err := c.do(ctx, get(topicPath(topic, "messages", id), url.Values{}), &m); err != nil {
		return nil, err
	}
	return &m, nil
}
