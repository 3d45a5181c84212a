package api

import (
	"mime"
	"time"

	"github.com/kairos-sh/kairos"
)

// CallbackSettings are the settings of the callback request that a topic
// gives its jobs and that a job, or a schedule for its occurrences, may
// set over the topic's: method, headers, timeout, max_attempts and
// backoff. A request body embeds them, and encoding/json reads their
// fields as the body's own; a fan-out subscription's body embeds them
// too.
//
// The URL is not one of them: each embedder keeps a field of its own for
// it, as each names it (callback_url; a subscription's url) and requires
// it or not.
type CallbackSettings struct {
	Method      *string           `json:"method"`
	Headers     map[string]string `json:"headers"`
	Timeout     *string           `json:"timeout"`
	MaxAttempts *int              `json:"max_attempts"`
	Backoff     *backoffRequest   `json:"backoff"`
}

// CallbackSettingsResponse shows callback settings, those set, with the
// values of secret-looking headers masked. A topic's answer shows them
// with the kairos defaults filled in (topicView), so every one but headers
// is there.
type CallbackSettingsResponse struct {
	Method      string            `json:"method,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Timeout     string            `json:"timeout,omitempty"`
	MaxAttempts int               `json:"max_attempts,omitempty"`
	Backoff     *backoffResponse  `json:"backoff,omitempty"`
}

type backoffRequest struct {
	Initial *string `json:"initial"`
	Max     *string `json:"max"`
}

// backoffResponse shows backoff durations; a job shows only the ones it sets.
type backoffResponse struct {
	Initial string `json:"initial,omitempty"`
	Max     string `json:"max,omitempty"`
}

// settingsFields are the callback settings of a kairos.Job or
// kairos.Topic, pointed at: the root types name them alike but share no
// type. contentType is set for a job, which keeps a Content-Type header
// apart from its headers; nil keeps it among them.
type settingsFields struct {
	method         *string
	headers        *map[string]string
	contentType    *string
	timeout        *time.Duration
	maxAttempts    *int
	backoffInitial *time.Duration
	backoffMax     *time.Duration
}

// jobSettings points at j's callback settings.
func jobSettings(j *kairos.Job) settingsFields {
	return settingsFields{&j.Method, &j.Headers, &j.ContentType, &j.Timeout, &j.MaxAttempts, &j.BackoffInitial, &j.BackoffMax}
}

// topicSettings points at t's callback settings.
func topicSettings(t *kairos.Topic) settingsFields {
	return settingsFields{&t.Method, &t.Headers, nil, &t.Timeout, &t.MaxAttempts, &t.BackoffInitial, &t.BackoffMax}
}

// check validates the settings s gives into dst, naming each field of an
// error with prefix before its JSON name; a setting s leaves out leaves
// dst's as it is, but for headers, which are set either way.
func (s CallbackSettings) check(fe *fieldErrors, prefix string, dst settingsFields) {
	if s.Method != nil {
		*dst.method = checkMethod(fe, prefix+"method", *s.Method)
	}
	*dst.headers = checkHeaders(fe, prefix+"headers", s.Headers)
	if ct, ok := (*dst.headers)["Content-Type"]; ok && dst.contentType != nil {
		delete(*dst.headers, "Content-Type")
		if len(*dst.headers) == 0 {
			*dst.headers = nil
		}
		if _, _, err := mime.ParseMediaType(ct); err != nil {
			fe.add(prefix+"headers.Content-Type", "%q is not a media type", ct)
		}
		*dst.contentType = ct
	}
	if s.MaxAttempts != nil {
		*dst.maxAttempts = checkAttempts(fe, prefix+"max_attempts", *s.MaxAttempts)
	}
	if s.Timeout != nil {
		*dst.timeout = parseDuration(fe, prefix+"timeout", *s.Timeout, minTimeout, maxTimeout)
	}
	if s.Backoff != nil {
		*dst.backoffInitial, *dst.backoffMax = s.Backoff.parse(fe, prefix+"backoff")
	}
}

// subscriptionSettings points at s's callback settings.
func subscriptionSettings(s *kairos.Subscription) settingsFields {
	return settingsFields{&s.Method, &s.Headers, nil, &s.Timeout, &s.MaxAttempts, &s.BackoffInitial, &s.BackoffMax}
}

// view shows the settings of f that are set, headers masked.
func (f settingsFields) view() CallbackSettingsResponse {
	v := CallbackSettingsResponse{Method: *f.method, Headers: maskHeaders(f.ownHeaders()), MaxAttempts: *f.maxAttempts}
	if *f.timeout > 0 {
		v.Timeout = f.timeout.String()
	}
	if *f.backoffInitial > 0 || *f.backoffMax > 0 {
		b := backoffResponse{}
		if *f.backoffInitial > 0 {
			b.Initial = f.backoffInitial.String()
		}
		if *f.backoffMax > 0 {
			b.Max = f.backoffMax.String()
		}
		v.Backoff = &b
	}
	return v
}

// ownHeaders returns the headers f sets, unmasked: its headers and, when
// it keeps one apart, its Content-Type (given as headers.Content-Type).
func (f settingsFields) ownHeaders() map[string]string {
	if f.contentType == nil || *f.contentType == "" {
		return *f.headers
	}
	out := make(map[string]string, len(*f.headers)+1)
	for k, v := range *f.headers {
		out[k] = v
	}
	out["Content-Type"] = *f.contentType
	return out
}

func checkAttempts(fe *fieldErrors, field string, n int) int {
	if n < 1 || n > maxAttemptsCap {
		fe.add(field, "%d is out of range: allowed 1 to %d", n, maxAttemptsCap)
		return 0
	}
	return n
}

func (b backoffRequest) parse(fe *fieldErrors, field string) (initial, max time.Duration) {
	if b.Initial != nil {
		initial = parseDuration(fe, field+".initial", *b.Initial, minBackoff, maxBackoff)
	}
	if b.Max != nil {
		max = parseDuration(fe, field+".max", *b.Max, minBackoff, maxBackoff)
	}
	lo, hi := initial, max
	if lo == 0 {
		lo = kairos.DefaultBackoffInitial
	}
	if hi == 0 {
		hi = kairos.DefaultBackoffMax
	}
	if (initial != 0 || max != 0) && hi < lo {
		fe.add(field+".max", "must be at least the initial backoff (%s)", lo)
	}
	return initial, max
}
