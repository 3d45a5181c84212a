package kairos

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// SuccessMark joins a delivered job's id and the attempt that delivered it
// in its success notification's job id, as NoticeMark does for a death.
const SuccessMark = "~ok."

// SuccessNoticeID is the job id of the success notification of job id,
// delivered by attempt n: "<id>~ok.<n>". Such ids are reserved.
func SuccessNoticeID(id string, n int) string { return id + SuccessMark + strconv.Itoa(n) }

// Kind says whether a job is one of its topic's own jobs (KindJob) or a
// notification that kairos made of another job's end (KindNotification:
// its failure or success notification, ParseNotice).
type Kind string

// The kinds of jobs.
const (
	KindJob          Kind = "job"
	KindNotification Kind = "notification"
)

// Valid reports whether k is one of the kinds.
func (k Kind) Valid() bool { return k == KindJob || k == KindNotification }

// KindOf returns the kind of the job of id: the ids of notifications are
// reserved (NoticeID, SuccessNoticeID), so the id tells.
func KindOf(id string) Kind {
	if _, _, ok := ParseNotice(id); ok {
		return KindNotification
	}
	return KindJob
}

// ParseNotice splits the job id of a notification, "<id><mark><attempt>",
// into the id of the job it tells of and its mark (NoticeMark or
// SuccessMark); false when id is not one.
func ParseNotice(id string) (job, mark string, ok bool) {
	for _, m := range []string{NoticeMark, SuccessMark} {
		i := strings.LastIndex(id, m)
		if i <= 0 || i+len(m) == len(id) {
			continue
		}
		digits := true
		for _, c := range id[i+len(m):] {
			if c < '0' || c > '9' {
				digits = false
				break
			}
		}
		if digits {
			return id[:i], m, true
		}
	}
	return "", "", false
}

// Response limits. An attempt keeps the start of its answer's body in
// its job's log, DefaultResponseBytes unless its topic says otherwise (at
// most MaxResponseBytes, ResponseBytesNone for none); a notification
// carries the body whole up to MaxNoticeResponse.
const (
	DefaultResponseBytes = 256
	MaxResponseBytes     = 16384
	ResponseBytesNone    = -1
	MaxNoticeResponse    = 64 << 10
)

// KeptResponse is how many bytes of an answer's body an attempt at one of
// the topic's jobs keeps (Topic.ResponseBytes): 0 for none.
func (t Topic) KeptResponse() int {
	switch {
	case t.ResponseBytes == ResponseBytesNone:
		return 0
	case t.ResponseBytes <= 0:
		return DefaultResponseBytes
	}
	return min(t.ResponseBytes, MaxResponseBytes)
}

// KeptHeaders are the headers of an answer that an attempt keeps.
var KeptHeaders = []string{"Content-Type", "Retry-After", "Location"}

// maxHeaderValue bounds a kept header's value: they are short, and a
// receiver's long one must not grow every job's log.
const maxHeaderValue = 512

// ResponseHeaders returns the answer's KeptHeaders that it has, each cut
// to 512 bytes; nil when it has none. A Content-Type of an answer that
// declared an empty body (Content-Length 0) is left out: it describes
// nothing, and an empty answer then costs its job no byte.
func ResponseHeaders(h http.Header, contentLength int64) map[string]string {
	var out map[string]string
	for _, k := range KeptHeaders {
		v := h.Get(k)
		if v == "" || (k == "Content-Type" && contentLength == 0) {
			continue
		}
		if len(v) > maxHeaderValue {
			v = strings.ToValidUTF8(v[:maxHeaderValue], "")
		}
		if out == nil {
			out = make(map[string]string, len(KeptHeaders))
		}
		out[k] = v
	}
	return out
}

// NoticeEnvelope is the body of a success or failure notification: the
// job, the attempt that ended it and the receiver's answer. Response is
// the answer's body whole up to MaxNoticeResponse, as text when it is
// valid UTF-8, else in base64 with ResponseEncoding "base64". A failure
// notification adds State ("dead", or "expired" for a job that ran out of
// time) and the last Error, and keeps the fields it had before (Type,
// Tenant, Attempts, DeadAt, LastAttempt) for the receivers written for them.
type NoticeEnvelope struct {
	Type             string            `json:"type"`
	JobID            string            `json:"job_id"`
	Topic            string            `json:"topic"`
	Tenant           string            `json:"tenant"`
	Attempt          int               `json:"attempt"`
	Status           int               `json:"status"`
	ResponseHeaders  map[string]string `json:"response_headers"`
	Response         string            `json:"response"`
	ResponseEncoding string            `json:"response_encoding,omitempty"`
	State            State             `json:"state,omitempty"`
	Error            string            `json:"error,omitempty"`
	// Failure notifications only, as they were before the fields above.
	Attempts    int                `json:"attempts,omitempty"`
	DeadAt      string             `json:"dead_at,omitempty"`
	LastAttempt *NoticeLastAttempt `json:"last_attempt,omitempty"`
	// ExpiresAt is an expired job's expiry.
	ExpiresAt string `json:"expires_at,omitempty"`
}

// NoticeLastAttempt is a failure notification's last_attempt, as it was
// before the envelope's own fields said the same.
type NoticeLastAttempt struct {
	N        int     `json:"n"`
	At       string  `json:"at"`
	Status   int     `json:"status,omitempty"`
	Error    string  `json:"error,omitempty"`
	Response string  `json:"response,omitempty"`
	Duration float64 `json:"duration_ms"`
}

// The Type of a notification.
const (
	NoticeDelivered = "job.delivered"
	NoticeDead      = "job.dead"
	NoticeExpired   = "job.expired"
)

// SuccessNotice is the success notification of job j, delivered by
// attempt a whose answer had body (up to MaxNoticeResponse of it), for url.
func SuccessNotice(url string, j Job, a Attempt, body []byte) Notice {
	e := NoticeEnvelope{Type: NoticeDelivered, JobID: j.ID, Topic: j.Topic, Tenant: j.Tenant,
		Attempt: a.N, Status: a.Status, ResponseHeaders: a.ResponseHeaders}
	e.setResponse(body)
	return Notice{URL: url, Body: e.encode()}
}

// FailureNotice is the failure notification of job j, ended in state
// (StateDead, or the expired state) at now after attempt a, whose answer
// had body (up to MaxNoticeResponse of it; nil with no answer), for url.
// a is the zero Attempt for a job that ended without one.
func FailureNotice(url string, j Job, a Attempt, body []byte, state State, now time.Time) Notice {
	typ := NoticeDead
	if state != StateDead {
		typ = "job." + string(state)
	}
	e := NoticeEnvelope{Type: typ, JobID: j.ID, Topic: j.Topic, Tenant: j.Tenant,
		Attempt: a.N, Status: a.Status, ResponseHeaders: a.ResponseHeaders, State: state, Error: a.Error,
		Attempts: j.Attempts, DeadAt: rfc3339ms(now)}
	if !j.ExpiresAt.IsZero() && state == StateExpired {
		e.ExpiresAt = rfc3339ms(j.ExpiresAt)
	}
	if a.N > 0 {
		e.LastAttempt = &NoticeLastAttempt{N: a.N, At: rfc3339ms(a.At), Status: a.Status, Error: a.Error,
			Response: a.Response, Duration: float64(a.Duration) / float64(time.Millisecond)}
	}
	e.setResponse(body)
	return Notice{URL: url, Body: e.encode()}
}

func (e *NoticeEnvelope) setResponse(body []byte) {
	if e.ResponseHeaders == nil {
		e.ResponseHeaders = map[string]string{} // an object always, for receivers that index it
	}
	body = body[:min(len(body), MaxNoticeResponse)]
	if utf8.Valid(body) {
		e.Response = string(body)
		return
	}
	e.Response, e.ResponseEncoding = base64.StdEncoding.EncodeToString(body), "base64"
}

func (e *NoticeEnvelope) encode() []byte {
	b, _ := json.Marshal(e) // strings and ints only: it cannot fail
	return b
}

func rfc3339ms(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
