package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeRefusesInexactKeys(t *testing.T) {
	tests := []struct {
		body string
		want FieldError
	}{
		{`{"DELAY":"1m"}`, FieldError{Field: "DELAY", Message: "unknown field: names are case-sensitive; did you mean delay?"}},
		{`{"delay":"1m","Run_At":"2026-11-21T10:30:00Z"}`, FieldError{Field: "Run_At", Message: "unknown field: names are case-sensitive; did you mean run_at?"}},
		{`{"delay":"1m","backoff":{"initial":"1s","bogus":1}}`, FieldError{Field: "backoff.bogus", Message: "unknown field"}},
		{`{"delay":"1m","backoff":{"Max":"1s"}}`, FieldError{Field: "backoff.Max", Message: "unknown field: names are case-sensitive; did you mean max?"}},
		{`{"":""}`, FieldError{Field: "body", Message: `unknown field "" (an empty key)`}},
		{`{"max_attempts":1.5}`, FieldError{Field: "max_attempts", Message: "must be a whole number (got number 1.5)"}},
		{`{"backoff":[]}`, FieldError{Field: "backoff", Message: "must be an object (got array)"}},
		{`{"backoff":{"initial":1}}`, FieldError{Field: "backoff.initial", Message: "must be a string (got number)"}},
		{`{"headers":{"X-Trace":1}}`, FieldError{Field: "headers", Message: "must be a string (got number)"}},
		{`{"labels":{"a.b":1}}`, FieldError{Field: "labels", Message: "must be a string (got number)"}},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			var req jobRequest
			err := decodeBytes([]byte(tt.body), &req)
			ve, ok := err.(*ValidationError)
			if !ok || len(ve.Errors) != 1 {
				t.Fatalf("decode %s: %v, want one field error", tt.body, err)
			}
			if d := cmp.Diff(tt.want, ve.Errors[0]); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	// Each body that embeds CallbackSettings knows their names as its own.
	for _, dst := range []any{new(topicRequest), new(scheduleRequest)} {
		err := decodeBytes([]byte(`{"timeout":"1s","backoff":{"Max":"1s"}}`), dst)
		ve, ok := err.(*ValidationError)
		if !ok || len(ve.Errors) != 1 {
			t.Fatalf("decode into %T: %v, want one field error", dst, err)
		}
		want := FieldError{Field: "backoff.Max", Message: "unknown field: names are case-sensitive; did you mean max?"}
		if d := cmp.Diff(want, ve.Errors[0]); d != "" {
			t.Errorf("%T (-want +got):\n%s", dst, d)
		}
	}
	// Exact keys with headers of any case still decode: header names are map keys.
	var req jobRequest
	if err := decodeBytes([]byte(`{"delay":"1m","headers":{"X-Trace":"a","x-other":"b"}}`), &req); err != nil {
		t.Fatal(err)
	}
}
