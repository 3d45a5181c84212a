package client

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is an answer of the server that refuses a call: its problem
// document (RFC 9457). Status is the HTTP status; Type says what kind of
// problem (such as urn:kairos:problem:not-found); Errors names each broken
// field of a validation problem (400, 413).
//
// An answer that is not a problem document (a proxy's error page, say)
// becomes an Error too, with its status, the status's text as Title and
// the start of the body as Detail.
type Error struct {
	Type   string       `json:"type"`
	Title  string       `json:"title"`
	Status int          `json:"status"`
	Detail string       `json:"detail,omitempty"`
	Errors []FieldError `json:"errors,omitempty"`
	// RetryAfter is the wait the answer's Retry-After header asked for, if
	// it had one (a 503 while Redis is away, a 429).
	RetryAfter time.Duration `json:"-"`
}

// FieldError names one invalid field, as in the request: "delay",
// "headers.X-Shop", "jobs[2].run_at"; "body" for the body as a whole.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error returns the status, title and detail: "404 Not Found: job
// \"order-1\": not found".
func (e *Error) Error() string {
	s := http.StatusText(e.Status)
	if e.Title != "" {
		s = e.Title
	}
	s = strconv.Itoa(e.Status) + " " + s
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// StatusCode returns the HTTP status of an [*Error] in err's chain, or 0
// when there is none (the call got no answer).
func StatusCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound reports whether err is the server's 404: no such topic, job or
// schedule for this tenant (another tenant's are not found either), as
// GetTopic, GetJob or CancelJob meet it.
//
// A create in a topic that is not registered is no 404. A job (or
// schedule) that names its own CallbackURL registers the topic, with no
// callback URL of its own; one that names none is refused with a 400 on
// the field callback_url, whose message names PUT /v1/topics/{topic}: test
// it with StatusCode(err) == 400 and the [*Error]'s Errors.
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// IsConflict reports whether err is the server's 409: the job or topic is
// not in a state that allows the call (a replay of a job that is not dead,
// the cancel of a delivered job, the delete of a topic that holds jobs).
func IsConflict(err error) bool { return StatusCode(err) == http.StatusConflict }

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// errorFrom makes the Error of a refused call from its answer.
func errorFrom(resp *http.Response, body []byte) *Error {
	e := &Error{}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/problem+json" || mt == "application/json" {
		if json.Unmarshal(body, e) != nil {
			*e = Error{}
		}
	}
	if e.Status == 0 || e.Title == "" {
		detail := strings.TrimSpace(string(body))
		if len(detail) > 200 {
			detail = detail[:200] + "…"
		}
		*e = Error{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Detail: detail}
	}
	e.Status = resp.StatusCode
	e.RetryAfter, _ = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	return e
}
