package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/filter"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// Subscription limits: a name is 1 to maxSubscriptionName characters (a
// delivery's id is "<message id>.<sub>", at most 128); a subscription
// names at most maxEventTypes event types of maxEventType characters.
const (
	maxSubscriptionName = 63
	maxEventTypes       = 50
	maxEventType        = 100
	maxDescription      = 500
	subscriptionRule    = "use 1-63 characters: letters, digits, '_' or '-', starting with a letter"
)

// validSubscription reports whether name may name a subscription: a
// letter first, so that no delivery id looks like a notification's.
func validSubscription(name string) bool {
	return name != "" && (name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z') &&
		validName(name, maxSubscriptionName, "_-")
}

// subscriptionRequest is the body of PUT /v1/topics/{topic}/subscriptions/{sub}.
type subscriptionRequest struct {
	URL        *string         `json:"url"`
	EventTypes *[]string       `json:"event_types"`
	Filter     json.RawMessage `json:"filter"`
	CallbackSettings
	Rate        *rateRequest    `json:"rate"`
	Parallelism *int            `json:"parallelism"`
	Breaker     *breakerRequest `json:"breaker"`
	Paused      *bool           `json:"paused"`
	Description *string         `json:"description"`
	Signing     *string         `json:"signing"`
}

// subscriptionCounts are a subscription's deliveries by what became of them.
type subscriptionCounts struct {
	Pending   int64 `json:"pending"`
	Delivered int64 `json:"delivered"`
	Dead      int64 `json:"dead"`
}

// subscriptionResponse is a subscription as the API shows it, with the
// values of secret-looking headers and URL query values masked.
type subscriptionResponse struct {
	Name       string          `json:"name"`
	Topic      string          `json:"topic"`
	Tenant     string          `json:"tenant"`
	URL        string          `json:"url"`
	EventTypes []string        `json:"event_types,omitempty"`
	Filter     json.RawMessage `json:"filter,omitempty"`
	CallbackSettingsResponse
	Rate        *rateResponse      `json:"rate,omitempty"`
	Parallelism int                `json:"parallelism,omitempty"`
	Breaker     breakerResponse    `json:"breaker"`
	Paused      bool               `json:"paused"`
	Description string             `json:"description,omitempty"`
	Signing     string             `json:"signing"`
	Counts      subscriptionCounts `json:"counts"`
	CreatedAt   string             `json:"created_at"`
	UpdatedAt   string             `json:"updated_at"`
}

func subscriptionView(sub kairos.Subscription, c rdb.SubscriptionCounts) subscriptionResponse {
	v := subscriptionResponse{Name: sub.Name, Topic: sub.Topic, Tenant: sub.Tenant, URL: maskURL(sub.URL),
		EventTypes: sub.EventTypes, Filter: sub.Filter, CallbackSettingsResponse: subscriptionSettings(&sub).view(),
		Rate: rateView(sub.RateLimit, sub.RatePeriod), Parallelism: sub.Parallelism, Breaker: breakerView(sub.BreakerFailures, sub.BreakerCooldown),
		Paused: sub.Paused, Description: sub.Description, Signing: kairos.SigningTopic,
		Counts:    subscriptionCounts{Pending: c.Pending, Delivered: c.Delivered, Dead: c.Dead},
		CreatedAt: formatTime(sub.CreatedAt), UpdatedAt: formatTime(sub.UpdatedAt)}
	if sub.Signing == kairos.SigningSubscription {
		v.Signing = kairos.SigningSubscription
	}
	return v
}

// toSubscription validates a subscription request; allowPrivate lets its
// URL name a private address. A filter that does not parse is a field
// error naming its path.
func (req subscriptionRequest) toSubscription(tenant, topic, name string, allowPrivate bool) (kairos.Subscription, error) {
	var fe fieldErrors
	sub := kairos.Subscription{Tenant: tenant, Topic: topic, Name: name}
	if req.URL == nil || *req.URL == "" {
		fe.add("url", "required: the absolute http(s) URL that receives this subscription's deliveries")
	} else {
		checkURL(&fe, "url", *req.URL, allowPrivate)
		sub.URL = *req.URL
	}
	if req.EventTypes != nil {
		sub.EventTypes = checkEventTypes(&fe, "event_types", *req.EventTypes)
	}
	if len(req.Filter) > 0 && string(req.Filter) != "null" {
		if _, err := filter.Parse(req.Filter); err != nil {
			var pe *filter.PathError
			if errors.As(err, &pe) {
				fe.add(pe.Path, "%s", pe.Msg)
			} else {
				fe.add("filter", "%s", err.Error())
			}
		} else {
			sub.Filter = compactJSON(req.Filter)
		}
	}
	req.CallbackSettings.check(&fe, "", subscriptionSettings(&sub))
	if req.Rate != nil {
		sub.RateLimit, sub.RatePeriod = req.Rate.parse(&fe, "rate")
	}
	if req.Parallelism != nil {
		sub.Parallelism = checkParallelism(&fe, "parallelism", *req.Parallelism, "deliveries")
	}
	if req.Breaker != nil {
		sub.BreakerFailures, sub.BreakerCooldown = req.Breaker.parse(&fe, "breaker")
	}
	if req.Description != nil {
		if d := *req.Description; !utf8.ValidString(d) || utf8.RuneCountInString(d) > maxDescription {
			fe.add("description", "up to %d characters of UTF-8 text", maxDescription)
		} else {
			sub.Description = d
		}
	}
	if req.Signing != nil {
		switch *req.Signing {
		case kairos.SigningTopic, kairos.SigningSubscription:
			sub.Signing = *req.Signing
		default:
			fe.add("signing", "%q is not a signing: use \"topic\" (signed as the topic signs, the default) or \"subscription\" (a secret of the subscription's own, GET .../subscriptions/{sub}/signing-keys)", *req.Signing)
		}
	}
	return sub, fe.err()
}

// checkEventTypes validates a subscription's event types. An empty list
// is refused: it would receive no message, which is what a pause says.
func checkEventTypes(fe *fieldErrors, field string, types []string) []string {
	if len(types) == 0 {
		fe.add(field, "an empty list would receive no message: name 1 to %d event types, leave event_types out to receive every message, or pause the subscription", maxEventTypes)
		return nil
	}
	if len(types) > maxEventTypes {
		fe.add(field, "%d event types; at most %d are allowed", len(types), maxEventTypes)
		return nil
	}
	for i, t := range types {
		if msg := eventTypeProblem(t); msg != "" {
			fe.add(fmt.Sprintf("%s[%d]", field, i), "%s", msg)
		}
	}
	return append([]string{}, types...)
}

// eventTypeProblem says what is wrong with an event type, or "".
func eventTypeProblem(t string) string {
	if n := utf8.RuneCountInString(t); n == 0 || n > maxEventType || !utf8.ValidString(t) || strings.ContainsFunc(t, unicode.IsControl) {
		return fmt.Sprintf("an event type is 1-%d characters of UTF-8 text, no control characters", maxEventType)
	}
	return ""
}

// compactJSON returns raw without insignificant space.
func compactJSON(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// subscriptionTarget reads the tenant, topic and subscription a request
// names; a name that could not be a subscription's is a 404.
func (s *Server) subscriptionTarget(r *http.Request) (tenant, topic, name string, err error) {
	tenant, topic, err = s.topicTarget(r)
	if err != nil {
		return "", "", "", err
	}
	name = chi.URLParam(r, "sub")
	if !validSubscription(name) {
		return "", "", "", fmt.Errorf("subscription %q (%s): %w", name, subscriptionRule, kairos.ErrNotFound)
	}
	return tenant, topic, name, nil
}

// subscriptionAnswer shows sub with its counts and its breaker's state.
func (s *Server) subscriptionAnswer(ctx context.Context, sub kairos.Subscription, counts map[string]rdb.SubscriptionCounts) (subscriptionResponse, error) {
	if counts == nil {
		var err error
		if counts, err = s.store.SubscriptionCountsOf(ctx, sub.Tenant, sub.Topic); err != nil {
			return subscriptionResponse{}, err
		}
	}
	v := subscriptionView(sub, counts[sub.Name])
	if sub.BreakerFailures > 0 {
		b, err := s.breakerNow(ctx, sub.DeliveryTopic(kairos.Topic{Tenant: sub.Tenant, Name: sub.Topic}))
		if err != nil {
			return subscriptionResponse{}, err
		}
		v.Breaker.State, v.Breaker.OpenUntil = b.State, b.OpenUntil
	}
	return v, nil
}

// putSubscription handles PUT /v1/topics/{topic}/subscriptions/{sub}:
// 201 for a new one, 200 for one replaced. The topic is registered with
// its first subscription when it was not.
func (s *Server) putSubscription(w http.ResponseWriter, r *http.Request) {
	tenant, topic, name, err := s.subscriptionTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req subscriptionRequest
	if err := s.decode(w, r, 96<<10, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	sub, err := req.toSubscription(tenant, topic, name, s.cfg.AllowPrivate)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sub, created, err := s.store.PutSubscription(r.Context(), sub, req.Paused)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.onTopic != nil {
		s.onTopic() // a topic registered with it gets its consumers at once
	}
	v, err := s.subscriptionAnswer(r.Context(), sub, nil)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, v)
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request) {
	tenant, topic, name, err := s.subscriptionTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reveal, err := revealHeaders(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sub, err := s.store.GetSubscription(r.Context(), tenant, topic, name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.subscriptionAnswer(r.Context(), sub, nil)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if reveal {
		v.Headers, v.URL = sub.Headers, sub.URL
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	tenant, topic, err := s.topicTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	subs, err := s.store.ListSubscriptions(r.Context(), tenant, topic)
	var counts map[string]rdb.SubscriptionCounts
	if err == nil {
		counts, err = s.store.SubscriptionCountsOf(r.Context(), tenant, topic)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]subscriptionResponse, len(subs))
	for i, sub := range subs {
		if out[i], err = s.subscriptionAnswer(r.Context(), sub, counts); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"subscriptions": out})
}

// pauseSubscription handles POST …/subscriptions/{sub}/pause and /resume:
// it answers the subscription. Resume files its parked deliveries again
// before it answers.
func (s *Server) pauseSubscription(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant, topic, name, err := s.subscriptionTarget(r)
		var sub kairos.Subscription
		if err == nil {
			// filing parked deliveries again may take longer than a request's Redis budget
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), time.Minute)
			defer cancel()
			sub, err = s.store.PauseSubscription(ctx, tenant, topic, name, pause)
		}
		var v subscriptionResponse
		if err == nil {
			v, err = s.subscriptionAnswer(r.Context(), sub, nil)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// deleteSubscriptionResponse answers a delete: the bulk operation that
// cancels the subscription's pending deliveries (GET /v1/operations/{id}).
type deleteSubscriptionResponse struct {
	Subscription string `json:"subscription"`
	Operation    string `json:"operation,omitempty"`
}

// deleteSubscription handles DELETE …/subscriptions/{sub}: the
// subscription goes at once, and its pending deliveries are cancelled by a
// bulk operation (202, with its id); a worker that meets one of them
// before the operation does ends it dead without a callback.
func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	tenant, topic, name, err := s.subscriptionTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.store.DeleteSubscription(r.Context(), tenant, topic, name); err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := deleteSubscriptionResponse{Subscription: name}
	op := rdb.Operation{ID: rdb.NewOperationID(), Tenant: tenant, Topic: topic, Action: rdb.ActionCancel,
		Filter: rdb.BulkFilter{Labels: map[string]string{kairos.LabelSubscription: name}}}
	if s.cfg.Bulk != nil {
		op, err = s.cfg.Bulk.Create(r.Context(), op)
		resp.Operation = op.ID
	} else {
		err = s.cancelAll(r.Context(), op)
	}
	if err != nil {
		s.writeError(w, r, fmt.Errorf("subscription %q deleted, but cancelling its pending deliveries failed (cancel them with POST .../jobs/bulk, label subscription:%s): %w", name, name, err))
		return
	}
	writeJSON(w, http.StatusAccepted, resp)
}

// cancelAll runs a cancel operation to its end in this request, for a
// process that runs no bulk operations.
func (s *Server) cancelAll(ctx context.Context, op rdb.Operation) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	cursor := ""
	for {
		step, err := s.store.BulkBatch(ctx, op, cursor, 500)
		if err != nil || step.Finished {
			return err
		}
		cursor = step.Cursor
	}
}

// getSubscriptionSigningKeys serves GET …/subscriptions/{sub}/signing-keys:
// the subscription's own secrets, when it signs with them.
func (s *Server) getSubscriptionSigningKeys(w http.ResponseWriter, r *http.Request) {
	s.subscriptionSigningKeys(w, r, s.store.GetSubscriptionSigningKeys)
}

// rotateSubscriptionSigningKeys serves POST …/subscriptions/{sub}/signing-keys/rotate.
func (s *Server) rotateSubscriptionSigningKeys(w http.ResponseWriter, r *http.Request) {
	s.subscriptionSigningKeys(w, r, s.store.RotateSubscriptionSigningKeys)
}

func (s *Server) subscriptionSigningKeys(w http.ResponseWriter, r *http.Request, keys func(ctx context.Context, tenant, topic, sub string) (rdb.SigningKeys, error)) {
	tenant, topic, name, err := s.subscriptionTarget(r)
	var sub kairos.Subscription
	if err == nil {
		sub, err = s.store.GetSubscription(r.Context(), tenant, topic, name)
	}
	if err == nil && sub.Signing != kairos.SigningSubscription {
		err = fmt.Errorf("%w: subscription %q is signed as its topic signs; PUT it with \"signing\": \"subscription\" to give it a secret of its own", kairos.ErrConflict, name)
	}
	var k rdb.SigningKeys
	if err == nil {
		k, err = keys(r.Context(), tenant, topic, name)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, signingKeysResponse{Current: k.Current, Next: k.Next})
}
