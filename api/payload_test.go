package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestPayloadUnreadableRefused refuses, with a 400 naming payload and the
// rule, payloads that kairos or a common receiver cannot read back as sent,
// and leaves Redis as it was; the limits themselves are accepted.
func TestPayloadUnreadableRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepObj := strings.Repeat(`{"a":`, MaxPayloadDepth+1) + "1" + strings.Repeat("}", MaxPayloadDepth+1)

	e.createJob(t, acme, "orders", obj{"delay": "1m", "payload": json.RawMessage(nest(MaxPayloadDepth))})
	e.createJob(t, acme, "orders", obj{"delay": "1m", "payload": json.RawMessage(`{"s": "\ud83d\ude00 ok", "n": 1.7e308, "tiny": 1e-400}`)})
	tests := []struct {
		name, payload, want string
		field               string // payload unless set
	}{
		{"array nested past the limit", nest(MaxPayloadDepth + 1), "deeper than 128 levels", ""},
		{"objects nested past the limit", deepObj, "the limit is 128", ""},
		{"far past Go's own limit", nest(20000), "at most 128 levels", "body"},
		{"invalid UTF-8", "\"caf\xe9\"", "not valid UTF-8", ""},
		{"lone high surrogate", `{"s": "\ud800"}`, "surrogate pair", ""},
		{"high surrogate then text", `"\ud800x"`, "surrogate pair", ""},
		{"lone low surrogate", `["\udc00"]`, "surrogate pair", ""},
		{"number past float64", `{"n": 1e400}`, "too large for a 64-bit float", ""},
		{"negative number past float64", `[-2E+308]`, "too large for a 64-bit float", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/v1/topics/orders/jobs", "/v1/topics/orders/schedules/s1"} {
				before := e.snapshot(t)
				body := `{"delay": "1m", "payload": ` + tc.payload + `}`
				method := "POST"
				if strings.Contains(path, "schedules") {
					body, method = `{"every": "1h", "payload": `+tc.payload+`}`, "PUT"
				}
				field := "payload"
				if tc.field != "" {
					field = tc.field
				}
				p := e.refused(t, e.do(t, method, path, acme, body), before, http.StatusBadRequest, []string{field}, false)
				if !strings.Contains(p.Errors[0].Message, tc.want) {
					t.Errorf("%s: message %q, want it to say %q", path, p.Errors[0].Message, tc.want)
				}
			}
			// in a batch, the item fails alone
			before := e.snapshot(t)
			res := e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, `{"jobs": [{"delay": "1m", "payload": `+tc.payload+`}]}`, specLenient())
			if res.Status < 400 {
				t.Errorf("batch of one bad item: status %d", res.Status)
			}
			if !strings.Contains(string(res.Body), `"field":"jobs[0].payload"`) && tc.field == "" {
				t.Errorf("batch answer does not name jobs[0].payload: %s", res.Body)
			}
			e.unchanged(t, before)
		})
	}
}

// FuzzCheckPayload holds checkPayload to what it promises: it never
// panics, and a payload it accepts is read back by encoding/json as the
// same value.
func FuzzCheckPayload(f *testing.F) {
	for _, s := range []string{`{}`, `[[[]]]`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800"`, "\"\xff\"", `1e400`, `-1e-400`,
		`{"a":[1,2,{"b":"c\"d"}]}`, `"\u00e9\\u"`, `123456789012345678901234567890`, `"\ud800\u0041"`, `0.5E+10`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if !json.Valid(p) {
			return
		}
		if checkPayload(p) != "" {
			return
		}
		var v any
		if err := json.Unmarshal(p, &v); err != nil {
			t.Fatalf("accepted %q, which encoding/json cannot read: %v", p, err)
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var w any
		if err := json.Unmarshal(out, &w); err != nil {
			t.Fatal(err)
		}
		out2, _ := json.Marshal(w)
		if string(out) != string(out2) {
			t.Fatalf("%q does not read back: %s then %s", p, out, out2)
		}
		if strings.ContainsRune(string(out), '\uFFFD') && !strings.Contains(string(p), "\uFFFD") && !strings.Contains(strings.ToLower(string(p)), `\ufffd`) {
			t.Fatalf("accepted %q, which reads back with a replacement character: %s", p, out)
		}
	})
}
