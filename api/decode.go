package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"time"
)

// bodyRate is the slowest a large request body may arrive, in bytes a
// second: a body of n bytes gets n/bodyRate seconds on top of the read
// timeout.
const bodyRate = 64 << 10

// decode is the package's decode for handlers: it first gives a body of up
// to limit bytes time to arrive. The server's read deadline (ReadTimeout
// from the request's start) fits a small body; a larger one gets a second
// for each bodyRate bytes more, counted from the length the request
// declares when it declares one, and never past limit; the write deadline
// moves as much. A declared length above limit is refused before anything
// is read. The time the body took does not count against the request's
// Redis time (notBody).
func (s *Server) decode(w http.ResponseWriter, r *http.Request, limit int64, dst any) (err error) {
	defer func() { err = s.explainBodyLimit(err, limit) }() // which limit, set by what
	n := limit
	if r.ContentLength >= 0 {
		if r.ContentLength > limit {
			return tooLarge(limit)
		}
		n = r.ContentLength
	}
	if extra := time.Duration(n/bodyRate) * time.Second; extra > 0 {
		// The write deadline runs from the end of the headers too, so it
		// moves as much. An error means the writer cannot move deadlines
		// (a test's recorder): the server's own deadlines then hold.
		rc, now := http.NewResponseController(w), time.Now()
		_ = rc.SetReadDeadline(now.Add(s.cfg.ReadTimeout + extra))
		_ = rc.SetWriteDeadline(now.Add(s.cfg.WriteTimeout + extra))
	}
	start := time.Now()
	err = decode(r, limit, dst)
	s.notBody(r, time.Since(start))
	return err
}

func tooLarge(limit int64) error {
	return &ValidationError{Status: http.StatusRequestEntityTooLarge, Errors: []FieldError{{
		Field: "body", Message: fmt.Sprintf("request body is larger than the %d-byte limit", limit)}}}
}

// decode reads a JSON request body strictly: the content type must be JSON,
// the body at most limit bytes, unknown fields and trailing data refused.
func decode(r *http.Request, limit int64, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return errorf(http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not accepted: send application/json", ct))
		}
	}
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= limit {
		buf.Grow(int(n) + bytes.MinRead) // one allocation for the whole body
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, limit+1))
	body := buf.Bytes()
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || int64(len(body)) > limit {
		return tooLarge(limit)
	}
	if err != nil {
		return errorf(http.StatusBadRequest, "could not read the request body: "+err.Error())
	}
	return decodeBytes(body, dst)
}

// decodeBytes is decode's JSON half, also used by the fuzz tests. A body
// that dst's fast decoder takes needs nothing more; any other is decoded
// strictly. dst may alias body after.
func decodeBytes(body []byte, dst any) error {
	if f, ok := dst.(fastDecoder); ok && f.decodeFast(body) {
		return nil
	}
	return decodeStrict(body, dst)
}

// decodeStrict decodes body with encoding/json after strictKeys has
// checked its keys.
func decodeStrict(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return &ValidationError{Errors: []FieldError{{Field: "body", Message: "request body is empty: send a JSON object"}}}
	}
	if json.Valid(body) {
		if fe := strictKeys(body, reflect.TypeOf(dst), ""); fe != nil {
			return &ValidationError{Errors: []FieldError{*fe}}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return &ValidationError{Errors: []FieldError{{Field: "body", Message: "unexpected data after the JSON object"}}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &ValidationError{Errors: []FieldError{{Field: "body", Message: "unexpected data after the JSON object"}}}
	}
	return nil
}

// jsonError turns a decoding error into a field error a caller can act on.
func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se) && strings.Contains(se.Error(), "exceeded max depth"):
		return &ValidationError{Errors: []FieldError{{Field: "body", Message: fmt.Sprintf("nests arrays and objects more than 10000 levels deep (at byte %d); a payload may nest at most %d levels", se.Offset, MaxPayloadDepth)}}}
	case errors.As(err, &se):
		return &ValidationError{Errors: []FieldError{{Field: "body", Message: fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se)}}}
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return &ValidationError{Errors: []FieldError{{Field: field, Message: fmt.Sprintf("must be %s (got %s)", jsonKind(te.Type.Kind().String()), te.Value)}}}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &ValidationError{Errors: []FieldError{{Field: name, Message: "unknown field"}}}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &ValidationError{Errors: []FieldError{{Field: "body", Message: "malformed JSON: the body ends early"}}}
	}
	var fe *fieldDecodeError
	if errors.As(err, &fe) {
		return &ValidationError{Errors: []FieldError{{Field: fe.field, Message: fe.msg}}}
	}
	return &ValidationError{Errors: []FieldError{{Field: "body", Message: "malformed JSON: " + err.Error()}}}
}

type fieldDecodeError struct{ field, msg string }

func (e *fieldDecodeError) Error() string { return e.field + ": " + e.msg }

func jsonKind(k string) string {
	switch k {
	case "int", "int64", "int32", "uint", "uint64":
		return "a whole number"
	case "float64":
		return "a number"
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	return "a " + k
}

// fieldErrors collects validation failures of one request.
type fieldErrors []FieldError

func (f *fieldErrors) add(field, format string, args ...any) {
	*f = append(*f, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (f fieldErrors) err() error {
	if len(f) == 0 {
		return nil
	}
	return &ValidationError{Errors: f}
}
