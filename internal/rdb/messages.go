package rdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kairos-sh/kairos"
)

// A published message (fan-out) is one record of its own, read back by
// GET …/messages/{id}; its deliveries are jobs of the topic:
//
//	P:msg:{<tenant>/<topic>/<id>}    STRING the message (messageRecord, JSON), PX its run_at + the retention period
//	P:msgu:{<tenant>/<topic>}:<key>  STRING a message dedup key: the first message's id, PX the dedup window
//
// Nothing sweeps either: both expire.

// Message is a message published to a topic, with the deliveries its
// publish created (those of the subscriptions it matched).
type Message struct {
	Tenant, Topic, ID string
	EventType         string
	// Payload is the message's payload, kept in its record only when it
	// has no deliveries: GetMessage returns it nil for one that has, whose
	// deliveries' jobs carry it (each the same).
	Payload    []byte
	Labels     map[string]string
	RunAt      time.Time
	CreatedAt  time.Time
	Deliveries []Delivery
}

// Delivery names a message's delivery to one subscription: a job of the
// message's topic, of id kairos.DeliveryID(message id, Subscription).
type Delivery struct {
	Subscription string `json:"s"`
	JobID        string `json:"j"`
}

// messageRecord is a message as stored. A delivery's job id is always
// kairos.DeliveryID(message id, subscription), so the record names its
// subscriptions only (Subs), and leaves the payload to their jobs; a
// message that matched none keeps its payload. Records of the form
// written before, each delivery with its job id (Deliveries) and the
// payload kept as well, still read: a record lives the retention period
// at most.
type messageRecord struct {
	EventType  string            `json:"e,omitempty"`
	Payload    json.RawMessage   `json:"p,omitempty"`
	Text       string            `json:"pt,omitempty"` // a payload that is not JSON
	Labels     map[string]string `json:"l,omitempty"`
	RunAtMS    int64             `json:"r"`
	CreatedMS  int64             `json:"c"`
	Subs       []string          `json:"n,omitempty"`
	Deliveries []Delivery        `json:"d,omitempty"` // the form written before Subs
}

// PutMessage stores m, readable until the retention period after its
// run_at (or after now, for a message due already): one round trip. The
// payload of a message with deliveries is not stored again (Message).
func (s *Store) PutMessage(ctx context.Context, m Message) error {
	r := messageRecord{EventType: m.EventType, Labels: m.Labels, RunAtMS: ms(m.RunAt), CreatedMS: ms(m.CreatedAt)}
	for _, d := range m.Deliveries {
		if d.JobID != kairos.DeliveryID(m.ID, d.Subscription) {
			return fmt.Errorf("store message %s: delivery %q to %q is not named after it", m.ID, d.JobID, d.Subscription)
		}
		r.Subs = append(r.Subs, d.Subscription)
	}
	switch {
	case len(r.Subs) > 0: // in its deliveries' jobs
	case json.Valid(m.Payload):
		r.Payload = m.Payload
	default:
		r.Text = string(m.Payload)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode message %s: %w", m.ID, err)
	}
	ttl := s.opts.Retention + max(m.RunAt.Sub(s.Now()), 0)
	if err := s.c.Set(ctx, s.k.message(m.Tenant, m.Topic, m.ID), raw, ttl).Err(); err != nil {
		return fmt.Errorf("store message %s: %w", m.ID, err)
	}
	return nil
}

// GetMessage reads a message, or returns kairos.ErrNotFound (never
// published, or past its retention). Its Payload is nil when its
// deliveries' jobs hold it.
func (s *Store) GetMessage(ctx context.Context, tenant, topic, id string) (Message, error) {
	raw, err := s.c.Get(ctx, s.k.message(tenant, topic, id)).Bytes()
	if isNil(err) {
		return Message{}, fmt.Errorf("message %q: %w", id, kairos.ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("get message %s: %w", id, err)
	}
	var r messageRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return Message{}, fmt.Errorf("decode message %s: %w", id, err)
	}
	m := Message{Tenant: tenant, Topic: topic, ID: id, EventType: r.EventType, Payload: r.Payload, Labels: r.Labels,
		RunAt: fromMS(r.RunAtMS), CreatedAt: fromMS(r.CreatedMS), Deliveries: r.Deliveries}
	if r.Text != "" {
		m.Payload = []byte(r.Text)
	}
	for _, sub := range r.Subs {
		m.Deliveries = append(m.Deliveries, Delivery{Subscription: sub, JobID: kairos.DeliveryID(id, sub)})
	}
	if m.Deliveries == nil {
		m.Deliveries = []Delivery{}
	}
	return m, nil
}

// DedupMessage takes a topic's message dedup key for message id for the
// window, unless a message took it within the window already: then it
// returns that message's id and true.
func (s *Store) DedupMessage(ctx context.Context, tenant, topic, key, id string, window time.Duration) (string, bool, error) {
	k := s.k.messageDedup(tenant, topic, key)
	pipe := s.c.Pipeline()
	pipe.SetNX(ctx, k, id, window)
	first := pipe.Get(ctx, k)
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return "", false, fmt.Errorf("message dedup key: %w", err)
	}
	if v := first.Val(); v != "" && v != id {
		return v, true, nil
	}
	return id, false, nil
}

// GetJobs reads jobs of keys, each as GetJob does: one error a job that
// could not be read (kairos.ErrNotFound for one gone).
func (s *Store) GetJobs(ctx context.Context, keys []kairos.JobKey) ([]kairos.Job, []error) {
	jobs, errs := make([]kairos.Job, len(keys)), make([]error, len(keys))
	done := make(chan struct{}, len(keys))
	sem := make(chan struct{}, 8)
	for i, k := range keys {
		go func() {
			sem <- struct{}{}
			jobs[i], errs[i] = s.GetJob(ctx, k)
			<-sem
			done <- struct{}{}
		}()
	}
	for range keys {
		<-done
	}
	return jobs, errs
}
