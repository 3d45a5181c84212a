package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// JobRequest is one job to create: when it fires, its payload, and the
// settings it does not inherit from its topic (zero fields inherit).
//
// RunAt fires it at a time, kept to the millisecond: a finer time is
// rounded up, so the job never fires before it. Otherwise it fires Delay
// from now (also rounded up), and a request with neither fires now: it
// sends neither run_at nor delay, which the API reads as now. Giving both
// is an error the server reports.
//
// Payload is any JSON value, sent as the callback body byte for byte
// (spacing and escapes included); nil sends no body. With a non-JSON
// Content-Type header, a JSON string is sent as its text.
type JobRequest struct {
	ID          string          `json:"id,omitempty"` // optional: kairos makes one; an id makes the create an upsert, and retryable
	RunAt       time.Time       `json:"run_at,omitzero"`
	Delay       Duration        `json:"delay,omitzero"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	CallbackURL string          `json:"callback_url,omitempty"`
	CallbackSettings
	FlowKey    string `json:"flow_key,omitempty"`    // counts the job against that flow-control quota, not its topic's
	FailureURL string `json:"failure_url,omitempty"` // told of the job's death instead of its topic's failure URL
	// OnConflict is what the create does to a job of its ID that has not
	// fired: ConflictReplace (the server's default when empty),
	// ConflictKeep, or ConflictDebounce, which needs MaxDelay: the job's
	// time never moves past its first create's time plus MaxDelay.
	OnConflict string   `json:"on_conflict,omitempty"`
	MaxDelay   Duration `json:"max_delay,omitempty"`
	// DedupKey (with no ID) makes a create within DedupWindow (server
	// default 10m, at most 7d) of the first create of the key on the topic
	// create nothing: it answers the first job with ResultDuplicate, even
	// once that was delivered. Such a create is retried as the policy
	// allows, as one with an ID is.
	DedupKey    string   `json:"dedup_key,omitempty"`
	DedupWindow Duration `json:"dedup_window,omitempty"`

	// SuccessURL is told of the job's delivery (a Notification) instead
	// of its topic's success URL.
	SuccessURL string `json:"success_url,omitempty"`
	// ExpiresAt, or TTL from the run time (not both), is the last instant
	// an attempt may start: a job not delivered by then ends StateExpired.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	TTL       Duration  `json:"ttl,omitempty"`
	// Priority (0 to 9) orders the jobs a flow limit keeps waiting: higher
	// first, each step worth a minute of due time.
	Priority int `json:"priority,omitempty"`
	// Labels are up to 10 key-value pairs (keys of 1-32 characters of
	// a-z, 0-9, '_', '.' and '-'; values up to 64 characters) that
	// listings and bulk operations select jobs by.
	Labels map[string]string `json:"labels,omitempty"`
}

// What a create does to a job of its ID that has not fired ([JobRequest.OnConflict]).
const (
	ConflictReplace  = "replace"
	ConflictKeep     = "keep"
	ConflictDebounce = "debounce"
)

// RescheduleRequest is the new time of [Client.RescheduleJob]: RunAt, or
// else Delay from now (zero: now, sent as a delay of 0s since the API asks
// a reschedule to say where to). Finer times round up as a job's.
type RescheduleRequest struct {
	RunAt time.Time `json:"run_at,omitzero"`
	Delay Duration  `json:"delay,omitzero"`
}

// when is the wire form of a time given as runAt or delay: run_at when it
// is set, else delay; both when both are, so that the server says which
// rule they break.
type when struct {
	RunAt string    `json:"run_at,omitempty"`
	Delay *Duration `json:"delay,omitempty"`
}

// whenOf is the wire form of runAt and delay; with neither set, nothing
// when orNow (the API reads that as now), else a delay of 0s.
func whenOf(runAt time.Time, delay Duration, orNow bool) when {
	w := when{RunAt: wireTime(runAt)}
	if (runAt.IsZero() && !orNow) || delay != 0 {
		w.Delay = &delay
	}
	return w
}

// wireTime writes a request's time in UTC, to the millisecond when it is a
// whole one ("2026-11-21T10:30:00.250Z"), else with all its digits, so that
// the server rounds it (a run_at up: nothing fires before it); "" for
// the zero time.
func wireTime(t time.Time) string {
	switch {
	case t.IsZero():
		return ""
	case t.Nanosecond()%int(time.Millisecond) != 0:
		return t.UTC().Format(time.RFC3339Nano)
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// MarshalJSON encodes r as the API's job request, its payload as given.
func (r JobRequest) MarshalJSON() ([]byte, error) {
	type plain JobRequest // without this method
	at := whenOf(r.RunAt, r.Delay, true)
	// The outer fields hide plain's of the same JSON names.
	w := struct {
		plain
		RunAt   string          `json:"run_at,omitempty"`
		Delay   *Duration       `json:"delay,omitempty"`
		Payload json.RawMessage `json:"payload,omitempty"` // spliced in below, as is
	}{plain: plain(r), RunAt: at.RunAt, Delay: at.Delay}
	b, err := marshal(w)
	if err != nil {
		return nil, err
	}
	return withPayload(b, r.Payload, "job")
}

// withPayload splices payload into the encoded object b as its "payload"
// member: json.Marshal would compact it, and a payload is sent as the
// caller wrote it. what names the request in the error of an invalid one.
func withPayload(b []byte, payload json.RawMessage, what string) ([]byte, error) {
	if len(payload) == 0 {
		return b, nil
	}
	if !json.Valid(payload) {
		return nil, errors.New(what + " payload is not valid JSON: send text as a JSON string")
	}
	if len(b) > 2 {
		b = append(b[:len(b)-1], ',')
	} else {
		b = b[:1] // {}
	}
	b = append(b, `"payload":`...)
	b = append(b, bytes.TrimSpace(payload)...)
	return append(b, '}'), nil
}

// MarshalJSON encodes r as the API's reschedule request.
func (r RescheduleRequest) MarshalJSON() ([]byte, error) {
	return marshal(whenOf(r.RunAt, r.Delay, false))
}

// marshal is json.Marshal without HTML escapes ("&" stays "&" in a URL).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// batchBody encodes jobs as a batch request, each payload as given.
func batchBody(jobs []JobRequest) ([]byte, error) {
	b := []byte(`{"jobs":[`)
	for i, j := range jobs {
		item, err := j.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("jobs[%d]: %w", i, err)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, item...)
	}
	return append(b, "]}"...), nil
}
