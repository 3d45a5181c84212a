package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/filter"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// maxMessageID bounds a message's id: its deliveries' ids,
// "<message id>.<sub>", are job ids (at most 128 characters).
const (
	maxMessageID  = 64
	messageIDRule = "use 1-64 characters: letters, digits, '.', '_', ':', '~' or '-', starting with a letter or digit"
)

func validMessageID(id string) bool { return validName(id, maxMessageID, "._:~-") }

// messageRequest is the body of POST /v1/topics/{topic}/messages.
type messageRequest struct {
	ID          *string           `json:"id"`
	EventType   *string           `json:"event_type"`
	Payload     json.RawMessage   `json:"payload"`
	RunAt       *string           `json:"run_at"`
	Delay       *string           `json:"delay"`
	Labels      map[string]string `json:"labels"`
	DedupKey    *string           `json:"dedup_key"`
	DedupWindow *string           `json:"dedup_window"`
	TTL         *string           `json:"ttl"`
	ExpiresAt   *string           `json:"expires_at"`
	Priority    *int              `json:"priority"`
}

// deliveryRef names a message's delivery to one subscription.
type deliveryRef struct {
	Subscription string `json:"subscription"`
	JobID        string `json:"job_id"`
}

// publishResponse answers a publish.
type publishResponse struct {
	ID         string        `json:"id"`
	Topic      string        `json:"topic"`
	RunAt      string        `json:"run_at"`
	Deliveries []deliveryRef `json:"deliveries"`
	// Result is "duplicate" for a publish whose dedup_key an earlier
	// message took within its window: nothing was published.
	Result string `json:"result,omitempty"`
}

// deliveryResponse is a delivery as GET …/messages/{id} shows it: its job's
// state, or no state once its record is gone.
type deliveryResponse struct {
	Subscription string           `json:"subscription"`
	JobID        string           `json:"job_id"`
	State        kairos.State     `json:"state,omitempty"`
	Attempts     int              `json:"attempts"`
	NextRunAt    string           `json:"next_run_at,omitempty"`
	DoneAt       string           `json:"done_at,omitempty"`
	LastAttempt  *attemptResponse `json:"last_attempt,omitempty"`
}

// messageResponse is a message with its deliveries.
type messageResponse struct {
	ID         string             `json:"id"`
	Topic      string             `json:"topic"`
	Tenant     string             `json:"tenant"`
	EventType  string             `json:"event_type,omitempty"`
	Payload    json.RawMessage    `json:"payload,omitempty"`
	Labels     map[string]string  `json:"labels,omitempty"`
	RunAt      string             `json:"run_at"`
	CreatedAt  string             `json:"created_at"`
	Deliveries []deliveryResponse `json:"deliveries"`
}

// toDeliveries validates a publish against now: the template of its
// deliveries (run_at, expiry, priority, labels, payload, validated as a
// job create's), its event type, and its dedup key and window.
func (req messageRequest) toDeliveries(tenant, topic string, now time.Time, maxPayload int64) (kairos.Job, string, error) {
	jr := jobRequest{RunAt: req.RunAt, Delay: req.Delay, Payload: req.Payload, Labels: req.Labels,
		DedupKey: req.DedupKey, DedupWindow: req.DedupWindow, TTL: req.TTL, ExpiresAt: req.ExpiresAt, Priority: req.Priority}
	j, err := jr.toJob(tenant, topic, now, maxPayload, true)
	var fe fieldErrors
	var ve *ValidationError
	if errors.As(err, &ve) {
		fe = append(fe, ve.Errors...)
	} else if err != nil {
		return j, "", err
	}
	if req.ID != nil {
		if !validMessageID(*req.ID) {
			fe.add("id", "%q is not a valid message id: %s", *req.ID, messageIDRule)
		}
		j.ID = *req.ID
	} else {
		j.ID = newMessageID()
	}
	eventType := ""
	if req.EventType != nil {
		if msg := eventTypeProblem(*req.EventType); msg != "" {
			fe.add("event_type", "%s", msg)
		}
		eventType = *req.EventType
	}
	return j, eventType, fe.err()
}

func newMessageID() string { return randomID("msg_") }

// filterCache keeps subscriptions' filters parsed, by their JSON: a
// publish matches each without parsing it again.
type filterCache struct {
	mu sync.RWMutex
	m  map[string]*filter.Filter
}

// maxCachedFilters bounds the filters kept: past it the cache starts anew.
const maxCachedFilters = 10000

func (c *filterCache) get(raw json.RawMessage) (*filter.Filter, error) {
	c.mu.RLock()
	f, ok := c.m[string(raw)]
	c.mu.RUnlock()
	if ok {
		return f, nil
	}
	f, err := filter.Parse(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedFilters {
		c.m = map[string]*filter.Filter{}
	}
	c.m[string(raw)] = f
	c.mu.Unlock()
	return f, nil
}

// matching returns the subscriptions of subs that a message of eventType
// and payload goes to; the payload is decoded once, and only when some
// subscription has a filter.
func (s *Server) matching(subs []kairos.Subscription, eventType string, payload []byte) ([]kairos.Subscription, error) {
	var doc *filter.Doc
	var out []kairos.Subscription
	for _, sub := range subs {
		if !sub.Receives(eventType) {
			continue
		}
		if len(sub.Filter) > 0 {
			f, err := s.filters.get(sub.Filter)
			if err != nil { // checked at PUT: only a filter stored by another version fails here
				s.log.Warn("a subscription's filter does not parse; it receives nothing", "topic", sub.Topic, "subscription", sub.Name, "err", err)
				continue
			}
			if doc == nil {
				if doc, err = filter.Decode(payload); err != nil {
					doc = filter.NewDoc(nil) // not JSON: only filters that ask for no value match
				}
			}
			if !f.Match(doc) {
				continue
			}
		}
		out = append(out, sub)
	}
	return out, nil
}

// publish handles POST /v1/topics/{topic}/messages: each subscription the
// message matches now gets a delivery, a job of the topic created through
// the batch create, and the message is stored with their ids. With the
// topic and its subscriptions cached, a message that matches none costs
// one Redis round trip: its record.
func (s *Server) publish(w http.ResponseWriter, r *http.Request) {
	tenant, topic, err := s.topicTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req messageRequest
	if err := s.decode(w, r, jobBody(s.cfg.MaxPayload), &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	now := s.store.Now()
	tmpl, eventType, err := req.toDeliveries(tenant, topic, now, s.cfg.MaxPayload)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	if _, err := s.store.GetTopic(ctx, tenant, topic); err != nil {
		s.writeError(w, r, err)
		return
	}
	dedup := tmpl.Create
	tmpl.Create = kairos.CreateOptions{}
	if dedup.DedupKey != "" {
		first, dup, err := s.store.DedupMessage(ctx, tenant, topic, dedup.DedupKey, tmpl.ID, dedup.DedupWindow)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if dup {
			s.answerDuplicate(w, r, tenant, topic, first)
			return
		}
	}
	subs, err := s.store.Subscriptions(ctx, tenant, topic)
	var matched []kairos.Subscription
	if err == nil {
		matched, err = s.matching(subs, eventType, tmpl.Payload)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	msg := rdb.Message{Tenant: tenant, Topic: topic, ID: tmpl.ID, EventType: eventType, Payload: tmpl.Payload,
		Labels: tmpl.Labels, RunAt: tmpl.RunAt, CreatedAt: now, Deliveries: []rdb.Delivery{}}
	resp := publishResponse{ID: tmpl.ID, Topic: topic, RunAt: formatTime(tmpl.RunAt), Deliveries: []deliveryRef{}}
	if len(matched) > 0 {
		if err := s.deliver(r, tmpl, matched, &msg); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if err := s.store.PutMessage(ctx, msg); err != nil {
		s.writeError(w, r, err)
		return
	}
	for _, d := range msg.Deliveries {
		resp.Deliveries = append(resp.Deliveries, deliveryRef{Subscription: d.Subscription, JobID: d.JobID})
	}
	writeJSON(w, http.StatusCreated, resp)
}

// deliver creates the deliveries of message tmpl to subs (one batch
// create, within the tenant's max_pending) and records them in msg and in
// the subscriptions' counts.
func (s *Server) deliver(r *http.Request, tmpl kairos.Job, subs []kairos.Subscription, msg *rdb.Message) error {
	ctx := r.Context()
	allowed, release, err := s.admitPending(ctx, tmpl.Tenant, len(subs))
	if err != nil {
		return err
	}
	defer release()
	if allowed < len(subs) {
		return &quotaError{retryAfter: pendingRetryAfter, detail: fmt.Sprintf(
			"tenant %q may create %d more pending jobs (max_pending) and this message matches %d subscriptions; nothing was published",
			tmpl.Tenant, allowed, len(subs))}
	}
	tp, ts, end := s.startCreate(r, tmpl.Tenant, tmpl.Topic, "", len(subs))
	jobs := make([]kairos.Job, len(subs))
	for i, sub := range subs {
		j := tmpl
		j.ID = kairos.DeliveryID(tmpl.ID, sub.Name)
		j.Labels = make(map[string]string, len(tmpl.Labels)+1)
		maps.Copy(j.Labels, tmpl.Labels)
		j.Labels[kairos.LabelSubscription] = sub.Name
		j.TraceParent, j.TraceState = tp, ts
		jobs[i] = j
	}
	var created []rdb.DeliveryMove
	var failed error
	for i, res := range s.store.EnqueueBatch(ctx, jobs) {
		if res.Err != nil {
			failed = cmp.Or(failed, fmt.Errorf("delivery to subscription %q: %w", subs[i].Name, res.Err))
			continue
		}
		msg.Deliveries = append(msg.Deliveries, rdb.Delivery{Subscription: subs[i].Name, JobID: jobs[i].ID})
		if res.Result == rdb.ResultCreated {
			created = append(created, rdb.DeliveryMove{Subscription: subs[i].Name, Born: res.Job.CreatedAt,
				SubscriptionCounts: rdb.SubscriptionCounts{Pending: 1}})
		}
	}
	end(failed)
	if err := s.store.CountDeliveries(ctx, tmpl.Tenant, tmpl.Topic, created); err != nil {
		s.log.Warn("count a message's deliveries", "topic", tmpl.Topic, "message", tmpl.ID, "err", err)
	}
	if failed != nil && len(msg.Deliveries) > 0 {
		// the message is stored with those made, so that it can be read
		// and published again under its id (which replaces them)
		if err := s.store.PutMessage(ctx, *msg); err != nil {
			s.log.Warn("store a message whose deliveries were not all created", "message", tmpl.ID, "err", err)
		}
	}
	return failed
}

// answerDuplicate answers a publish whose dedup key message first took:
// 200 with that message, "result": "duplicate".
func (s *Server) answerDuplicate(w http.ResponseWriter, r *http.Request, tenant, topic, first string) {
	resp := publishResponse{ID: first, Topic: topic, Deliveries: []deliveryRef{}, Result: string(rdb.ResultDuplicate)}
	m, err := s.store.GetMessage(r.Context(), tenant, topic, first)
	switch {
	case err == nil:
		resp.RunAt = formatTime(m.RunAt)
		for _, d := range m.Deliveries {
			resp.Deliveries = append(resp.Deliveries, deliveryRef{Subscription: d.Subscription, JobID: d.JobID})
		}
	case !errors.Is(err, kairos.ErrNotFound): // gone: its id is all there is to show
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// getMessage handles GET /v1/topics/{topic}/messages/{id}: the message and
// each delivery's state, read from its job. The payload of a message with
// deliveries is read from the first of their jobs still there (its record
// does not keep it).
func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	tenant, topic, err := s.topicTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id := chi.URLParam(r, "id")
	if !validMessageID(id) {
		s.writeError(w, r, fmt.Errorf("message %q: %w", id, kairos.ErrNotFound))
		return
	}
	m, err := s.store.GetMessage(r.Context(), tenant, topic, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	keys := make([]kairos.JobKey, len(m.Deliveries))
	for i, d := range m.Deliveries {
		keys[i] = kairos.JobKey{Tenant: tenant, Topic: topic, ID: d.JobID}
	}
	jobs, errs := s.store.GetJobs(r.Context(), keys)
	v := messageResponse{ID: m.ID, Topic: topic, Tenant: tenant, EventType: m.EventType, Labels: m.Labels,
		Payload: payloadJSON(kairos.Job{Payload: m.Payload}), RunAt: formatTime(m.RunAt), CreatedAt: formatTime(m.CreatedAt),
		Deliveries: make([]deliveryResponse, len(m.Deliveries))}
	for i, d := range m.Deliveries {
		dv := deliveryResponse{Subscription: d.Subscription, JobID: d.JobID}
		switch {
		case errs[i] == nil:
			if sub, ok := kairos.DeliveryOf(jobs[i]); v.Payload == nil && m.Payload == nil && ok && sub == d.Subscription {
				v.Payload = payloadJSON(jobs[i]) // the record leaves it to its deliveries
			}
			jv := jobView(jobs[i])
			dv.State, dv.Attempts, dv.NextRunAt, dv.DoneAt, dv.LastAttempt = jobs[i].State, jobs[i].Attempts, jv.NextRunAt, jv.DoneAt, jv.LastAttempt
		case !errors.Is(errs[i], kairos.ErrNotFound): // gone past its retention: no state to show
			s.writeError(w, r, errs[i])
			return
		}
		v.Deliveries[i] = dv
	}
	writeJSON(w, http.StatusOK, v)
}

// deliveryBefore reads job key before a cancel or replay when it may be a
// delivery (its id has a DeliveryMark), so that deliveryMoved can keep its
// subscription's counts; ok is false when it is not one.
func (s *Server) deliveryBefore(ctx context.Context, key kairos.JobKey) (j kairos.Job, sub string, ok bool) {
	if !strings.Contains(key.ID, kairos.DeliveryMark) {
		return j, "", false
	}
	j, err := s.store.GetJob(ctx, key)
	if err != nil {
		return j, "", false
	}
	sub, ok = kairos.DeliveryOf(j)
	return j, sub, ok
}

// deliveryMoved counts delivery j of sub, read before a cancel or a
// replay, moved to state to in its subscription's counts
// (rdb.CountsMove).
func (s *Server) deliveryMoved(ctx context.Context, j kairos.Job, sub string, to kairos.State) {
	d := rdb.CountsMove(j.State, to)
	if d == (rdb.SubscriptionCounts{}) {
		return
	}
	m := rdb.DeliveryMove{Subscription: sub, Born: j.CreatedAt, SubscriptionCounts: d}
	if err := s.store.CountDeliveries(ctx, j.Tenant, j.Topic, []rdb.DeliveryMove{m}); err != nil {
		s.log.Warn("count a delivery's move", "job_id", j.ID, "err", err)
	}
}
