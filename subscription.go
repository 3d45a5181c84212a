package kairos

import (
	"encoding/json"
	"strings"
	"time"
)

// Subscription is an endpoint of a topic's fan-out: each message published
// to the topic that it matches (EventTypes, Filter) becomes a delivery, a
// job of the topic that fires with the subscription's settings as they are
// when it fires (DeliveryTopic). Zero fields take the topic's setting
// (Method, Timeout, MaxAttempts, backoff) or none (headers, limits).
type Subscription struct {
	Tenant, Topic, Name string
	URL                 string
	// EventTypes lists the message event types it receives; nil: all of
	// them, and messages without one.
	EventTypes []string
	// Filter is a filter (internal/filter) matched against each message's
	// payload, as given (checked when the subscription is put); nil: none.
	Filter         json.RawMessage
	Headers        map[string]string
	Method         string
	Timeout        time.Duration
	MaxAttempts    int
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// Flow control and circuit breaker of its deliveries, counted apart
	// from every other subscription's (DeliveryTopic's flow).
	RateLimit       int
	RatePeriod      time.Duration
	Parallelism     int
	BreakerFailures int
	BreakerCooldown time.Duration
	Description     string
	// Signing is SigningTopic ("" too): its deliveries are signed as the
	// topic signs its callbacks; or SigningSubscription: with a secret of
	// its own.
	Signing string
	// Paused subscriptions deliver nothing: their deliveries wait, parked,
	// until resume. A PUT that does not say leaves it as it is.
	Paused    bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SigningSubscription is the Signing of a subscription whose deliveries
// are signed with a secret of its own (Topic.OwnSecret names it).
const SigningSubscription = "subscription"

// LabelSubscription is the label key that marks a delivery with its
// subscription's name (DeliveryOf); jobs and messages may not set it.
const LabelSubscription = "subscription"

// ParkFor is how far ahead a worker gives back a due delivery of a
// paused subscription: it waits in Redis, parked, costing nothing, until
// resume files it again at its run_at, or, paused that long, comes due
// and is parked again.
const ParkFor = 30 * 24 * time.Hour

// DeliveryMark joins a message's id and a subscription's name in the id of
// the message's delivery to it: "<message id>.<sub>".
const DeliveryMark = "."

// DeliveryID is the job id of message msgID's delivery to subscription sub.
func DeliveryID(msgID, sub string) string { return msgID + DeliveryMark + sub }

// DeliveryOf returns the subscription a job is a delivery to, or false
// when it is not one: a delivery carries the label LabelSubscription and
// its id ends in DeliveryMark and that name.
func DeliveryOf(j Job) (string, bool) {
	sub, ok := j.Labels[LabelSubscription]
	if !ok || sub == "" || !strings.HasSuffix(j.ID, DeliveryMark+sub) || len(j.ID) == len(sub)+1 {
		return "", false
	}
	return sub, true
}

// MessageOf returns the message id of a delivery's job id to sub.
func MessageOf(id, sub string) string { return strings.TrimSuffix(id, DeliveryMark+sub) }

// Receives reports whether the subscription takes messages of event type
// eventType ("" for none): any when it names no event types, else only the
// ones it names.
func (s Subscription) Receives(eventType string) bool {
	if s.EventTypes == nil {
		return true
	}
	for _, e := range s.EventTypes {
		if e == eventType {
			return true
		}
	}
	return false
}

// DeliveryTopic is the topic its deliveries fire as: t with the
// subscription's URL, headers (the topic's are for the topic's own URL),
// method, timeout, attempts and backoff where it sets them, its limits and
// circuit breaker in a flow of its own (Topic.Flow), and its signing.
// Notifications (success_url, failure_url), response_bytes and the
// callback slots stay the topic's.
func (s Subscription) DeliveryTopic(t Topic) Topic {
	d := t
	d.Subscription = s.Name
	d.CallbackURL, d.Headers = s.URL, s.Headers
	if s.Method != "" {
		d.Method = s.Method
	}
	if s.Timeout > 0 {
		d.Timeout = s.Timeout
	}
	if s.MaxAttempts > 0 {
		d.MaxAttempts = s.MaxAttempts
	}
	if s.BackoffInitial > 0 {
		d.BackoffInitial = s.BackoffInitial
	}
	if s.BackoffMax > 0 {
		d.BackoffMax = s.BackoffMax
	}
	d.RateLimit, d.RatePeriod, d.Parallelism = s.RateLimit, s.RatePeriod, s.Parallelism
	d.BreakerFailures, d.BreakerCooldown = s.BreakerFailures, s.BreakerCooldown
	d.FlowKey = ""
	if s.Signing == SigningSubscription {
		d.Signing = SigningSubscription
	}
	return d
}
