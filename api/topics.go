package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// topicRequest is the body of PUT /v1/topics/{topic}.
type topicRequest struct {
	CallbackURL *string `json:"callback_url"`
	CallbackSettings
	Concurrency *int            `json:"concurrency"`
	Rate        *rateRequest    `json:"rate"`
	Parallelism *int            `json:"parallelism"`
	FlowKey     *string         `json:"flow_key"`
	Breaker     *breakerRequest `json:"breaker"`
	FailureURL  *string         `json:"failure_url"`
	Signing     *string         `json:"signing"`

	// success_url and response_bytes: delivery history (docs/callbacks.md)
	SuccessURL    *string `json:"success_url"`
	ResponseBytes *int    `json:"response_bytes"`
}

// breakerRequest turns a topic's circuit breaker on.
type breakerRequest struct {
	Failures *int    `json:"failures"`
	Cooldown *string `json:"cooldown"`
}

// breakerResponse shows a topic's circuit breaker and its state: every
// topic has one, "closed" with no settings when none is configured.
type breakerResponse struct {
	Failures  int    `json:"failures,omitempty"`
	Cooldown  string `json:"cooldown,omitempty"`
	State     string `json:"state"`
	OpenUntil string `json:"open_until,omitempty"`
}

// rateRequest is a topic's rate limit: limit deliveries per period.
type rateRequest struct {
	Limit  *int    `json:"limit"`
	Period *string `json:"period"`
}

// rateResponse shows a topic's rate limit.
type rateResponse struct {
	Limit  int    `json:"limit"`
	Period string `json:"period"`
}

// topicResponse is a topic as the API shows it, with the values of
// secret-looking headers masked.
type topicResponse struct {
	Name        string `json:"name"`
	Tenant      string `json:"tenant"`
	CallbackURL string `json:"callback_url,omitempty"`
	CallbackSettingsResponse
	Concurrency int             `json:"concurrency"`
	Rate        *rateResponse   `json:"rate,omitempty"`
	Parallelism int             `json:"parallelism,omitempty"`
	FlowKey     string          `json:"flow_key,omitempty"`
	Breaker     breakerResponse `json:"breaker"`
	FailureURL  string          `json:"failure_url,omitempty"`
	Signing     string          `json:"signing"`
	Paused      bool            `json:"paused"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"updated_at"`

	// success_url and response_bytes: delivery history (docs/callbacks.md)
	SuccessURL    string `json:"success_url,omitempty"`
	ResponseBytes int    `json:"response_bytes"`
}

// withBreaker adds the state of the topic's circuit breaker to its view.
func (s *Server) withBreaker(r *http.Request, t kairos.Topic, v topicResponse) (topicResponse, error) {
	b, err := s.breakerNow(r.Context(), t)
	if b != nil {
		v.Breaker.State, v.Breaker.OpenUntil = b.State, b.OpenUntil
	}
	return v, err
}

// breakerNow reads the state of topic t's circuit breaker; nil when it has
// none.
func (s *Server) breakerNow(ctx context.Context, t kairos.Topic) (*breakerStats, error) {
	if !t.HasBreaker() {
		return nil, nil
	}
	b, err := s.store.BreakerState(ctx, t)
	if err != nil {
		return nil, err
	}
	out := &breakerStats{State: b.State}
	if b.State == "open" {
		out.OpenUntil = formatTime(b.Until)
	}
	return out, nil
}

func topicView(t kairos.Topic) topicResponse {
	d := t.WithDefaults()
	signing := kairos.SigningTenant
	if t.OwnSecret() != "" {
		signing = kairos.SigningTopic
	}
	return topicResponse{Rate: rateView(t.RateLimit, t.RatePeriod), Parallelism: t.Parallelism, FlowKey: t.FlowKey, Breaker: breakerView(t.BreakerFailures, t.BreakerCooldown), FailureURL: maskURL(t.FailureURL), Signing: signing,
		Name: t.Name, Tenant: t.Tenant, CallbackURL: maskURL(t.CallbackURL), CallbackSettingsResponse: topicSettings(&d).view(),
		Concurrency: d.Concurrency, Paused: t.Paused, CreatedAt: formatTime(t.CreatedAt), UpdatedAt: formatTime(t.UpdatedAt),
		SuccessURL: maskURL(t.SuccessURL), ResponseBytes: t.KeptResponse(),
	}
}

// toTopic validates a topic request; allowPrivate lets its callback URL
// name a private address.
func (req topicRequest) toTopic(tenant, name string, allowPrivate bool) (kairos.Topic, error) {
	var fe fieldErrors
	t := kairos.Topic{Tenant: tenant, Name: name}
	if req.CallbackURL == nil || *req.CallbackURL == "" {
		fe.add("callback_url", "required: the absolute http(s) URL that receives this topic's callbacks")
	} else {
		checkURL(&fe, "callback_url", *req.CallbackURL, allowPrivate)
		t.CallbackURL = *req.CallbackURL
	}
	req.CallbackSettings.check(&fe, "", topicSettings(&t))
	if req.Concurrency != nil {
		if c := *req.Concurrency; c < 1 || c > maxConcurrency {
			fe.add("concurrency", "%d is out of range: allowed 1 to %d", c, maxConcurrency)
		} else {
			t.Concurrency = c
		}
	}
	if req.Rate != nil {
		t.RateLimit, t.RatePeriod = req.Rate.parse(&fe, "rate")
	}
	if req.Parallelism != nil {
		t.Parallelism = checkParallelism(&fe, "parallelism", *req.Parallelism, "callbacks")
	}
	if req.FlowKey != nil {
		t.FlowKey = checkFlowKey(&fe, "flow_key", *req.FlowKey)
	}
	if req.FailureURL != nil {
		checkURL(&fe, "failure_url", *req.FailureURL, allowPrivate)
		t.FailureURL = *req.FailureURL
	}
	if req.SuccessURL != nil {
		checkURL(&fe, "success_url", *req.SuccessURL, allowPrivate)
		t.SuccessURL = *req.SuccessURL
	}
	if req.ResponseBytes != nil {
		t.ResponseBytes = checkResponseBytes(&fe, "response_bytes", *req.ResponseBytes)
	}
	if req.Signing != nil {
		switch *req.Signing {
		case kairos.SigningTenant, kairos.SigningTopic:
			t.Signing = *req.Signing
		default:
			fe.add("signing", "%q is not a signing: use \"tenant\" (the tenant's secret, the default) or \"topic\" (a secret of the topic's own, GET /v1/topics/{topic}/signing-keys)", *req.Signing)
		}
	}
	if req.Breaker != nil {
		t.BreakerFailures, t.BreakerCooldown = req.Breaker.parse(&fe, "breaker")
	}
	return t, fe.err()
}

// checkParallelism validates a parallelism limit of what (callbacks,
// deliveries) in flight; 0 when it is out of range.
func checkParallelism(fe *fieldErrors, field string, p int, what string) int {
	if p < 1 || p > maxParallelism {
		fe.add(field, "%d is out of range: allowed 1 to %d %s in flight across all kairos processes", p, maxParallelism, what)
		return 0
	}
	return p
}

// parse validates a circuit breaker's settings; a setting left out takes
// its default (5 failures, defaultBreakerCooldown).
func (b breakerRequest) parse(fe *fieldErrors, field string) (failures int, cooldown time.Duration) {
	failures, cooldown = 5, defaultBreakerCooldown
	if b.Failures != nil {
		if n := *b.Failures; n < 1 || n > maxBreakerFailures {
			fe.add(field+".failures", "%d is out of range: allowed 1 to %d failed attempts in a row", n, maxBreakerFailures)
		} else {
			failures = n
		}
	}
	if b.Cooldown != nil {
		cooldown = parseDuration(fe, field+".cooldown", *b.Cooldown, time.Second, kairos.MaxBreakerCooldown)
	}
	return failures, cooldown
}

// rateView shows a rate limit; nil when there is none.
func rateView(limit int, period time.Duration) *rateResponse {
	if limit <= 0 {
		return nil
	}
	return &rateResponse{Limit: limit, Period: period.String()}
}

// breakerView shows a circuit breaker's settings, "closed" (its state is
// read apart, breakerNow); one with no failures set is none, and never
// opens.
func breakerView(failures int, cooldown time.Duration) breakerResponse {
	b := breakerResponse{State: "closed"}
	if failures > 0 {
		b.Failures, b.Cooldown = failures, cooldown.String()
	}
	return b
}

func (r rateRequest) parse(fe *fieldErrors, field string) (int, time.Duration) {
	if r.Limit == nil {
		fe.add(field+".limit", "required: how many deliveries per period, 1 to %d", maxRateLimit)
	} else if *r.Limit < 1 || *r.Limit > maxRateLimit {
		fe.add(field+".limit", "%d is out of range: allowed 1 to %d", *r.Limit, maxRateLimit)
	}
	var period time.Duration
	if r.Period == nil {
		fe.add(field+".period", "required: a Go duration from %s to %s, such as \"1s\" or \"1m\"", minRatePeriod, maxRatePeriod)
	} else {
		period = parseDuration(fe, field+".period", *r.Period, minRatePeriod, maxRatePeriod)
	}
	if r.Limit == nil || period == 0 || *r.Limit < 1 || *r.Limit > maxRateLimit {
		return 0, 0
	}
	return *r.Limit, period
}

// checkResponseBytes returns n as kairos.Topic.ResponseBytes keeps it
// (0 is kairos.ResponseBytesNone there) when it is in range.
func checkResponseBytes(fe *fieldErrors, field string, n int) int {
	switch {
	case n < 0 || n > kairos.MaxResponseBytes:
		fe.add(field, "%d is out of range: allowed 0 (keep no response body) to %d bytes of each answer's body (default %d)",
			n, kairos.MaxResponseBytes, kairos.DefaultResponseBytes)
		return 0
	case n == 0:
		return kairos.ResponseBytesNone
	}
	return n
}

// checkFlowKey returns k when it is a valid flow key.
func checkFlowKey(fe *fieldErrors, field, k string) string {
	if k == "" || len(k) > maxFlowKey || strings.IndexFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-", r))
	}) >= 0 {
		fe.add(field, "%q is not a flow key: 1 to %d letters, digits and . _ : -", k, maxFlowKey)
		return ""
	}
	return k
}

func (s *Server) putTopic(w http.ResponseWriter, r *http.Request) {
	tenant, name, err := s.topicTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req topicRequest
	if err := s.decode(w, r, 64<<10, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := req.toTopic(tenant, name, s.cfg.AllowPrivate)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, created, err := s.store.PutTopic(r.Context(), t)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.onTopic != nil {
		s.onTopic()
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, topicView(t))
}

func (s *Server) getTopic(w http.ResponseWriter, r *http.Request) {
	tenant, name, err := s.topicTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reveal, err := revealHeaders(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.store.GetTopic(r.Context(), tenant, name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.withBreaker(r, t, topicView(t))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if reveal {
		v.Headers = t.Headers
		v.CallbackURL, v.FailureURL, v.SuccessURL = t.CallbackURL, t.FailureURL, t.SuccessURL
	}
	writeJSON(w, http.StatusOK, v)
}

// pauseTopic handles POST /v1/topics/{topic}/pause and /resume: it answers
// the topic.
func (s *Server) pauseTopic(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant, name, err := s.topicTarget(r)
		var t kairos.Topic
		if err == nil {
			t, err = s.store.PauseTopic(r.Context(), tenant, name, pause)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, topicView(t))
	}
}

func (s *Server) listTopics(w http.ResponseWriter, r *http.Request) {
	tenant, err := s.tenant(r, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ts, err := s.store.ListTopics(r.Context(), tenant)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]topicResponse, len(ts))
	for i, t := range ts {
		if out[i], err = s.withBreaker(r, t, topicView(t)); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"topics": out})
}

func (s *Server) deleteTopic(w http.ResponseWriter, r *http.Request) {
	tenant, name, err := s.topicTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.store.DeleteTopic(r.Context(), tenant, name); err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.onTopic != nil {
		s.onTopic()
	}
	w.WriteHeader(http.StatusNoContent)
}

// getTopicSigningKeys serves GET /v1/topics/{topic}/signing-keys: the
// topic's own secrets, when it signs with them (signing: topic).
func (s *Server) getTopicSigningKeys(w http.ResponseWriter, r *http.Request) {
	s.topicSigningKeys(w, r, s.store.GetTopicSigningKeys)
}

// rotateTopicSigningKeys serves POST /v1/topics/{topic}/signing-keys/rotate.
func (s *Server) rotateTopicSigningKeys(w http.ResponseWriter, r *http.Request) {
	s.topicSigningKeys(w, r, s.store.RotateTopicSigningKeys)
}

func (s *Server) topicSigningKeys(w http.ResponseWriter, r *http.Request, keys func(ctx context.Context, tenant, topic string) (rdb.SigningKeys, error)) {
	tenant, name, err := s.topicTarget(r)
	var t kairos.Topic
	if err == nil {
		t, err = s.store.GetTopic(r.Context(), tenant, name)
	}
	if err == nil && t.OwnSecret() == "" {
		err = fmt.Errorf("%w: topic %q is signed with the tenant's secret (GET /v1/signing-keys); PUT it with \"signing\": \"topic\" to give it a secret of its own", kairos.ErrConflict, name)
	}
	var k rdb.SigningKeys
	if err == nil {
		k, err = keys(r.Context(), tenant, name)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, signingKeysResponse{Current: k.Current, Next: k.Next})
}
