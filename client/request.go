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
// RunAt fires it at a time (kept to the millisecond); otherwise it fires
// Delay from now, so a request with neither fires at once. Giving both is
// an error the server reports.
//
// Payload is any JSON value, sent as the callback body byte for byte
// (spacing and escapes included); nil sends no body. With a non-JSON
// Content-Type header, a JSON string is sent as its text.
type JobRequest struct {
	ID          string            `json:"id,omitempty"` // optional: kairos makes one; an id makes the create an upsert, and retryable
	RunAt       time.Time         `json:"run_at,omitzero"`
	Delay       Duration          `json:"delay,omitzero"`
	Payload     json.RawMessage   `json:"payload,omitempty"`
	CallbackURL string            `json:"callback_url,omitempty"`
	Method      string            `json:"method,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	MaxAttempts int               `json:"max_attempts,omitempty"`
	Timeout     Duration          `json:"timeout,omitempty"`
	Backoff     *Backoff          `json:"backoff,omitempty"`
	FlowKey     string            `json:"flow_key,omitempty"`    // counts the job against that flow-control quota, not its topic's
	FailureURL  string            `json:"failure_url,omitempty"` // told of the job's death instead of its topic's failure URL
}

// RescheduleRequest is the new time of [Client.RescheduleJob]: RunAt, or
// else Delay from now (zero: at once).
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

func whenOf(runAt time.Time, delay Duration) when {
	var w when
	if !runAt.IsZero() {
		w.RunAt = runAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	if runAt.IsZero() || delay != 0 {
		w.Delay = &delay
	}
	return w
}

// MarshalJSON encodes r as the API's job request, its payload as given.
func (r JobRequest) MarshalJSON() ([]byte, error) {
	type plain JobRequest // without this method
	at := whenOf(r.RunAt, r.Delay)
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
	return marshal(whenOf(r.RunAt, r.Delay))
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
