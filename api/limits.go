package api

import (
	"errors"
	"fmt"
	"net/http"
)

// The size limits and how a refusal names them. A route's body limit is
// not the payload limit: a job's body may hold the payload limit
// (KAIROS_MAX_PAYLOAD) plus room for the job's other fields, and a batch's
// up to maxBatch such items. A 413 says which limit applied and which
// setting sets it.

// payloadSetting names the setting of the payload limit.
const payloadSetting = "KAIROS_MAX_PAYLOAD or --max-payload"

// jobBodyRoom and batchItemRoom are the bytes a body may hold besides its
// payloads: a create's (or a schedule's) other fields, and a batch item's
// (jobBody and batchBody size the routes' limits from them).
const (
	jobBodyRoom   = 64 << 10
	batchItemRoom = 4 << 10
)

// payloadTooLarge is the refusal of a payload of n bytes over max.
func payloadTooLarge(field string, n int, max int64) error {
	return &ValidationError{Status: http.StatusRequestEntityTooLarge, Errors: []FieldError{{
		Field: field, Message: fmt.Sprintf("payload is %d bytes; the payload limit is %d bytes (%s)", n, max, payloadSetting)}}}
}

// explainBodyLimit gives the refusal of a body over limit (tooLarge) the
// reason of that limit: the payload limit and the room around it, or the
// route's fixed limit. Other errors pass unchanged.
func (s *Server) explainBodyLimit(err error, limit int64) error {
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Status != http.StatusRequestEntityTooLarge || len(ve.Errors) != 1 || ve.Errors[0].Field != "body" {
		return err
	}
	p := s.cfg.MaxPayload
	var why string
	switch limit {
	case jobBody(p):
		why = fmt.Sprintf("this route's body limit: the payload limit, %d bytes (%s), plus %d bytes for the other fields", p, payloadSetting, jobBodyRoom)
	case batchBody(p):
		why = fmt.Sprintf("a batch's body limit: %d items of the payload limit, %d bytes (%s), plus %d bytes each, at most %d bytes", maxBatch, p, payloadSetting, batchItemRoom, maxBatchBody)
	default:
		why = "this route's fixed body limit"
	}
	ve.Errors[0].Message = fmt.Sprintf("request body is larger than %d bytes, %s", limit, why)
	return err
}
