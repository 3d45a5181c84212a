package api

import (
	"bytes"
	"context"
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

// decode is the package's decode for handlers: it reads a JSON body of up
// to limit bytes strictly (readBody: only what arrives, within the
// server's budget of body bytes and its floor on their pace), and decodes
// it into dst. A declared length above limit is refused before anything is
// read; so is a Content-Type that is not JSON. The time the body took does
// not count against the request's Redis time (notBody), and the body holds
// its share of the budget until the request ends.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, limit int64, dst any) (err error) {
	defer func() { err = s.explainBodyLimit(err, limit) }() // which limit, set by what
	if r.ContentLength > limit {
		return tooLarge(limit)
	}
	if err := checkJSONType(r); err != nil {
		return err
	}
	start := time.Now()
	body, err := s.readBody(w, r, limit)
	s.notBody(r, time.Since(start))
	// dst may hold the body's bytes until the request ends (its context
	// ends with it): the body keeps its share of the budget until then.
	// Most bodies take none (bodyFree), and AfterFunc made a create a
	// fifth slower (BenchmarkCreateJob): those skip it.
	if body.taken > 0 {
		context.AfterFunc(r.Context(), body.release)
	}
	if err != nil {
		return err
	}
	return decodeBytes(body.bytes, dst)
}

func tooLarge(limit int64) error {
	return &ValidationError{Status: http.StatusRequestEntityTooLarge, Errors: []FieldError{{
		Field: "body", Message: fmt.Sprintf("request body is larger than the %d-byte limit", limit)}}}
}

// checkJSONType refuses a request whose Content-Type is set and is not
// JSON.
func checkJSONType(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return errorf(http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not accepted: send application/json", ct))
		}
	}
	return nil
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
		return jsonError(err, reflect.TypeOf(dst))
	}
	if dec.More() {
		return &ValidationError{Errors: []FieldError{{Field: "body", Message: "unexpected data after the JSON object"}}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &ValidationError{Errors: []FieldError{{Field: "body", Message: "unexpected data after the JSON object"}}}
	}
	return nil
}

// jsonError turns a decoding error into a field error a caller can act on;
// dst is the type decoded into.
func jsonError(err error, dst reflect.Type) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se) && strings.Contains(se.Error(), "exceeded max depth"):
		return &ValidationError{Errors: []FieldError{{Field: "body", Message: fmt.Sprintf("nests arrays and objects more than 10000 levels deep (at byte %d); a payload may nest at most %d levels", se.Offset, MaxPayloadDepth)}}}
	case errors.As(err, &se):
		return &ValidationError{Errors: []FieldError{{Field: "body", Message: fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se)}}}
	case errors.As(err, &te):
		field := jsonPath(dst, te.Field)
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

// jsonPath is the JSON path of a field that encoding/json names path (an
// UnmarshalTypeError's Field) in type typ: without the Go names of
// embedded structs, which it puts in since Go 1.24 (it names
// CallbackSettings.max_attempts what the body calls max_attempts).
func jsonPath(typ reflect.Type, path string) string {
	if !strings.Contains(path, ".") {
		return path
	}
	var out []string
	for seg := range strings.SplitSeq(path, ".") {
		for typ != nil && (typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map) {
			typ = typ.Elem()
		}
		if typ == nil || typ.Kind() != reflect.Struct {
			typ = nil // a map's keys and what is below them: kept as they are
			out = append(out, seg)
			continue
		}
		if f, ok := typ.FieldByName(seg); ok && f.Anonymous && f.Tag.Get("json") == "" {
			typ = f.Type
			continue
		}
		fields := map[string]reflect.Type{}
		jsonFields(typ, fields)
		typ = fields[seg]
		out = append(out, seg)
	}
	return strings.Join(out, ".")
}
