package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// Problem is an RFC 9457 problem document.
type Problem struct {
	Type   string       `json:"type"`
	Title  string       `json:"title"`
	Status int          `json:"status"`
	Detail string       `json:"detail,omitempty"`
	Errors []FieldError `json:"errors,omitempty"`
	// retryAfter is the answer's Retry-After header, in seconds, when it
	// has one (a 429 or a 503).
	retryAfter string
}

// FieldError names one invalid field of a request.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ValidationError is a request that broke one or more field rules.
type ValidationError struct {
	Status int // 400 unless a rule says otherwise (413 for a payload too large)
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, f := range e.Errors {
		parts[i] = f.Field + ": " + f.Message
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

// httpError is an error with a status and a message safe to show.
type httpError struct {
	status int
	title  string
	detail string
}

func (e *httpError) Error() string { return e.detail }

func errorf(status int, detail string) error {
	return &httpError{status: status, title: http.StatusText(status), detail: detail}
}

const problemBase = "urn:kairos:problem:"

// retrySafely is the advice of a 503 that a retry can follow without a
// second delivery: an id is free again once its job fired, a dedup_key
// holds for its whole window (enqueue.lua checks and sets it with the
// job, so a write that was lost took its key with it).
const retrySafely = "retry after Retry-After with the same dedup_key and dedup_window (default 10m, at most 7d): " +
	"within the window it answers the first job (200, result duplicate) even once that was delivered, and creates it if this write was lost " +
	"(the same id alone would create the job again after it fired)"

// writeError writes err as problem+json.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p := s.problem(r, err)
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="kairos"`)
	}
	if p.retryAfter == "" && (p.Status == http.StatusServiceUnavailable || p.Status == http.StatusInsufficientStorage) {
		p.retryAfter = "1"
	}
	if p.retryAfter != "" {
		w.Header().Set("Retry-After", p.retryAfter)
	}
	writeJSONType(w, p.Status, "application/problem+json", p)
}

// problem maps err to a problem document: the one place errors become
// statuses. Unknown errors become a plain 500 and one log line.
func (s *Server) problem(r *http.Request, err error) Problem {
	p := Problem{Status: http.StatusInternalServerError, Title: "Internal Server Error", Type: problemBase + "internal",
		Detail: "an unexpected error occurred; it has been logged"}
	var ve *ValidationError
	var he *httpError
	var ae *auth.Error
	var qe *quotaError
	var be *budgetError
	switch {
	case errors.As(err, &ve):
		p.Status = ve.Status
		if p.Status == 0 {
			p.Status = http.StatusBadRequest
		}
		p.Type, p.Title, p.Detail, p.Errors = problemBase+"validation", "Invalid request", ve.Error(), ve.Errors
		switch p.Status {
		case http.StatusRequestEntityTooLarge:
			p.Type, p.Title = problemBase+"too-large", "Request too large"
		case http.StatusRequestTimeout:
			p.Type, p.Title = problemBase+"slow-body", "Request body too slow"
		}
	case errors.As(err, &he):
		p.Status, p.Title, p.Detail = he.status, he.title, he.detail
		p.Type = problemBase + strings.ToLower(strings.ReplaceAll(he.title, " ", "-"))
	case errors.As(err, &be):
		p.Status, p.Type, p.Title, p.retryAfter = http.StatusServiceUnavailable, problemBase+"busy", "Service Unavailable", "1"
		p.Errors = []FieldError{{Field: "body", Message: be.Error()}}
		p.Detail = "invalid request: body: " + be.Error()
	case errors.As(err, &qe):
		p.Status, p.Type, p.Title, p.Detail = http.StatusTooManyRequests, problemBase+"too-many-requests", "Too Many Requests", qe.detail
		p.retryAfter = retryAfterSeconds(qe.retryAfter)
	case errors.As(err, &ae):
		p.Status, p.Type, p.Title, p.Detail = http.StatusUnauthorized, problemBase+"unauthorized", "Unauthorized", ae.Reason
	case errors.Is(err, kairos.ErrNotFound):
		p.Status, p.Type, p.Title, p.Detail = http.StatusNotFound, problemBase+"not-found", "Not Found", err.Error()
	case errors.Is(err, kairos.ErrInvalid):
		p.Status, p.Type, p.Title, p.Detail = http.StatusBadRequest, problemBase+"bad-request", "Bad Request", err.Error()
	case errors.Is(err, kairos.ErrConflict):
		p.Status, p.Type, p.Title, p.Detail = http.StatusConflict, problemBase+"conflict", "Conflict", err.Error()
	case errors.Is(err, rdb.ErrNotReplicated):
		p.Status, p.Type, p.Title = http.StatusServiceUnavailable, problemBase+"unavailable", "Service Unavailable"
		p.retryAfter = "1"
		p.Detail = "the job was stored but its Redis replicas did not confirm it in time, so a failover now could lose it; " + retrySafely
	case rdb.IsOutOfMemory(err):
		p.Status, p.Type, p.Title = http.StatusInsufficientStorage, problemBase+"out-of-memory", "Insufficient Storage"
		p.Detail = "the job store (Redis) is out of memory (maxmemory reached): nothing was stored; deliveries and cancels go on, " +
			"and new jobs are accepted again once memory is freed"
		s.log.Warn("redis out of memory", "method", r.Method, "path", r.URL.Path, "err", err)
	case isNotPrimary(err):
		p.Status, p.Type, p.Title = http.StatusServiceUnavailable, problemBase+"unavailable", "Service Unavailable"
		p.Detail = "the Redis node kairos writes to is not a master with enough replicas (a failover is under way): nothing was written; " + retrySafely
		p.retryAfter = "1"
		s.log.Warn("redis refused a write: not a master", "method", r.Method, "path", r.URL.Path, "err", err)
	case isUnavailable(err):
		p.Status, p.Type, p.Title = http.StatusServiceUnavailable, problemBase+"unavailable", "Service Unavailable"
		p.Detail = "the job store (Redis) is unreachable; retry shortly"
		p.retryAfter = "1"
		s.log.Warn("redis unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	return p
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	writeJSONType(w, status, "application/json", v)
}

func writeJSONType(w http.ResponseWriter, status int, ctype string, v any) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
