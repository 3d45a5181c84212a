package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/net/http/httpguts"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/duration"
)

// fuzzLimit is the payload limit in the fuzz tests: small, so the fuzzer
// reaches it.
const fuzzLimit = 512

var generatedID = regexp.MustCompile(`^job_[a-z2-7]{16}$`)

// addSpecExamples seeds f with the spec's request examples of an operation.
func addSpecExamples(f *testing.F, method, path string) {
	f.Helper()
	op := mustSpec(f).doc.Paths.Value(path).GetOperation(method)
	for _, ex := range op.RequestBody.Value.Content.Get("application/json").Examples {
		b, err := json.Marshal(ex.Value.Value)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkRefusal checks that err is a usable validation error.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T %v, want a *ValidationError", err, err)
	}
	if ve.Status != 0 && ve.Status != http.StatusBadRequest && ve.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d", ve.Status)
	}
	if len(ve.Errors) == 0 {
		t.Fatalf("validation error without fields: %v", err)
	}
	for _, fe := range ve.Errors {
		// An unknown key is named as sent, and "" is a key JSON allows.
		if (fe.Field == "" && fe.Message != "unknown field") || fe.Message == "" {
			t.Errorf("field error %+v", fe)
		}
	}
}

// specAccepts checks that the spec's schema accepts a request body.
func specAccepts(t *testing.T, schema string, body []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("canonical body is not JSON: %v\n%s", err, body)
	}
	s := mustSpec(t).doc.Components.Schemas[schema].Value
	if err := s.VisitJSON(v, openapi3.VisitAsRequest(), openapi3.MultiErrors()); err != nil {
		t.Errorf("the server accepts a %s that openapi.yaml refuses: %v\nbody: %s", schema, err, body)
	}
}

func isJSONType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// checkAcceptedHeaders checks the invariants of accepted callback headers.
func checkAcceptedHeaders(t *testing.T, h map[string]string) {
	t.Helper()
	if len(h) > maxHeaders {
		t.Errorf("%d headers accepted", len(h))
	}
	for k, v := range h {
		switch {
		case k != http.CanonicalHeaderKey(k):
			t.Errorf("header %q is not canonical", k)
		case reservedHeaders[k] || strings.HasPrefix(k, "Kairos-") || strings.HasPrefix(k, "Proxy-"):
			t.Errorf("reserved header %q accepted", k)
		case !httpguts.ValidHeaderFieldName(k) || len(k) > maxHeaderName || !httpguts.ValidHeaderFieldValue(v) || len(v) > maxHeaderValue:
			t.Errorf("header %q: %q accepted", k, v)
		}
	}
}

func checkBackoff(t *testing.T, initial, max time.Duration) {
	t.Helper()
	for _, d := range []time.Duration{initial, max} {
		if d != 0 && (d < minBackoff || d > maxBackoff) {
			t.Errorf("backoff %s accepted", d)
		}
	}
	lo, hi := initial, max
	if lo == 0 {
		lo = kairos.DefaultBackoffInitial
	}
	if hi == 0 {
		hi = kairos.DefaultBackoffMax
	}
	if hi < lo {
		t.Errorf("backoff max %s below initial %s accepted", hi, lo)
	}
}

// canonical writes an accepted job back as a request body: the form the
// spec documents, with the payload's bytes as they are stored.
func canonicalJob(t *testing.T, j kairos.Job) []byte {
	t.Helper()
	m := obj{"id": j.ID, "run_at": formatTime(j.RunAt)}
	if j.CallbackURL != "" {
		m["callback_url"] = j.CallbackURL
	}
	if j.Method != "" {
		m["method"] = j.Method
	}
	h := map[string]string{}
	for k, v := range j.Headers {
		h[k] = v
	}
	if j.ContentType != "" {
		h["Content-Type"] = j.ContentType
	}
	if len(h) > 0 {
		m["headers"] = h
	}
	if j.MaxAttempts != 0 {
		m["max_attempts"] = j.MaxAttempts
	}
	if j.Timeout != 0 {
		m["timeout"] = j.Timeout.String()
	}
	addBackoff(m, j.BackoffInitial, j.BackoffMax)
	if c := j.Create; c.OnConflict != "" {
		m["on_conflict"] = c.OnConflict
		if c.MaxDelay != 0 {
			m["max_delay"] = c.MaxDelay.String()
		}
	}
	if !j.ExpiresAt.IsZero() {
		m["expires_at"] = formatTime(j.ExpiresAt)
	}
	if j.Priority != 0 {
		m["priority"] = j.Priority
	}
	if c := j.Create; c.DedupKey != "" {
		delete(m, "id") // kairos picks it
		m["dedup_key"] = c.DedupKey
		m["dedup_window"] = c.DedupWindow.String()
	}
	out := marshal(t, m)
	if len(j.Payload) > 0 {
		p := j.Payload
		if !isJSONType(j.ContentType) {
			p = marshal(t, string(j.Payload))
		}
		out = append(append(append(out[:len(out)-1], `,"payload":`...), p...), '}')
	}
	return out
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b.Bytes())
}

// FuzzDecodeJobRequest feeds job bodies through decoding and validation:
// nothing panics, a refusal names its fields, and an accepted job keeps
// every rule, reads back the same from its canonical form, and that form
// is one openapi.yaml accepts.
func FuzzDecodeJobRequest(f *testing.F) {
	addSpecExamples(f, "POST", "/v1/topics/{topic}/jobs")
	for _, s := range []string{
		`{"delay":"90s"}`, `{"delay":"0"}`, `{"delay":"+1.5h"}`, `{"delay":"-0s"}`, `{"delay":"1h","id":"a:b~c@d"}`,
		`{"run_at":"2026-11-21T10:00:00.0005Z"}`, `{"run_at":"2026-11-21T10:00:52.522490Z"}`, `{"run_at":"2026-11-21T10:00:52.5220001+00:00"}`,
		`{}`, `{"payload":1}`, `{"delay":"1d"}`, `{"delay":"1.5d","timeout":"0.01d"}`, `{"run_at":null,"delay":null}`, `{"run_at":"2026-11-20T10:00:00Z"}`, `{"run_at":"2031-11-20T10:00:00+05:00"}`,
		`{"delay":"1m","payload":null}`, `{"delay":"1m","payload":"\"quoted\"","headers":{"content-type":"text/plain"}}`,
		`{"delay":"1m","payload":{"a":[1,2,{"b":null}]},"headers":{"Content-Type":"application/cloudevents+json"}}`,
		`{"delay":"1m","headers":{"x-a":"1","X-A":"2"}}`, `{"delay":"1m","headers":{"Kairos-X":"1","TE":"x","Webhook-Signature":"v1"}}`,
		`{"delay":"1m","backoff":{"initial":"10ms","max":"168h"},"timeout":"100ms","max_attempts":100,"method":"get"}`,
		`{"delay":"1m","backoff":{"max":"999ms"}}`, `{"delay":"1m","callback_url":"HTTP://Example.com:8080/x?y#z"}`,
		`{"delay":"1m","callback_url":"http://[::1]:80/"}`, `{"delay":"1m","max_attempts":1e2}`, `{"delay":"1m","max_attempts":1.0}`,
		`{"DELAY":"1m"}`, `{"delay":"1m","delay":"2m"}`, `{"id":null,"delay":"1m"}`, `{"delay":"1m"}  `, `{"delay":"1m"} x`,
		`{"delay":"1m","payload":"` + strings.Repeat("x", fuzzLimit-2) + `"}`, `{"delay":"1m","payload":"` + strings.Repeat("x", fuzzLimit-1) + `"}`,
		`null`, `[]`, `""`, `{`, `{"delay":"1m","payload":1e999}`, "{\"delay\":\"1m\",\"payload\":\"\xff\"}",
		`{"delay":"1m","payload":"\ud800"}`, `{"delay":"1m","payload":"\ud83d\ude00"}`, `{"delay":"1m","payload":[-1E+400]}`,
		`{"delay":"1m","payload":` + strings.Repeat("[", 129) + strings.Repeat("]", 129) + `}`,
		`{"delay":"1m","payload":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
		// create options: on_conflict, max_delay, dedup_key, dedup_window
		`{"id":"a","on_conflict":"keep"}`, `{"id":"a","on_conflict":"replace"}`, `{"id":"a","on_conflict":"Keep"}`,
		`{"id":"a","delay":"5m","on_conflict":"debounce","max_delay":"30d"}`, `{"id":"a","on_conflict":"debounce","max_delay":"30d1ms"}`,
		`{"id":"a","on_conflict":"debounce"}`, `{"id":"a","max_delay":"1h"}`, `{"id":"a","on_conflict":"keep","max_delay":"1h"}`,
		`{"on_conflict":"debounce","max_delay":"0s"}`, `{"on_conflict":null,"max_delay":null,"dedup_key":null,"dedup_window":null}`,
		`{"dedup_key":"order-8412"}`, `{"dedup_key":"order-8412","dedup_window":"7d"}`, `{"dedup_key":"k","dedup_window":"7d1ms"}`,
		`{"dedup_key":"k","dedup_window":"999ms"}`, `{"dedup_window":"1h"}`, `{"dedup_key":""}`, `{"dedup_key":"a\u0000b"}`,
		`{"dedup_key":"` + strings.Repeat("é", 200) + `"}`, `{"dedup_key":"` + strings.Repeat("x", 201) + `"}`,
		`{"id":"a","dedup_key":"k"}`, `{"dedup_key":"k","on_conflict":"keep"}`, `{"dedup_key":"a:b:c","delay":"1m","dedup_window":"1.5h"}`,
		// expiry and priority
		`{"ttl":"15m"}`, `{"ttl":"0s"}`, `{"ttl":"-1s"}`, `{"ttl":"0.0005s","delay":"1m"}`, `{"ttl":"1825d1ns"}`, `{"ttl":"x"}`,
		`{"expires_at":"2026-11-21T10:30:00.2509Z"}`, `{"run_at":"2026-11-21T10:30:00Z","expires_at":"2026-11-21T10:29:59.999Z"}`,
		`{"run_at":"2026-11-21T10:30:00.0001Z","expires_at":"2026-11-21T10:30:00.0001Z"}`, `{"expires_at":"2026-11-21T10:00:00Z","ttl":"1m"}`,
		`{"expires_at":"yesterday"}`, `{"expires_at":null,"ttl":null,"priority":null}`, `{"priority":0}`, `{"priority":9}`,
		`{"priority":10}`, `{"priority":-1}`, `{"priority":1.5}`, `{"priority":"5"}`, `{"priority":99999999999999999999}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req jobRequest
		if err := decodeBytes(body, &req); err != nil {
			checkRefusal(t, err)
			return
		}
		j, err := req.toJob("acme", "orders", t0, fuzzLimit, false)
		if err != nil {
			checkRefusal(t, err)
			var ve *ValidationError
			if errors.As(err, &ve) && ve.Status == http.StatusRequestEntityTooLarge && (len(ve.Errors) != 1 || ve.Errors[0].Field != "payload") {
				t.Errorf("413 on %+v", ve.Errors)
			}
			return
		}
		switch {
		case !validID(j.ID):
			t.Errorf("id %q accepted", j.ID)
		case req.ID == nil && !generatedID.MatchString(j.ID):
			t.Errorf("generated id %q", j.ID)
		case j.RunAt.Before(t0.Add(-maxPast)) || j.RunAt.After(t0.Add(maxFuture)):
			t.Errorf("run_at %s accepted", j.RunAt)
		case req.RunAt == nil && req.Delay == nil && !j.RunAt.Equal(t0):
			t.Errorf("neither run_at nor delay: run_at %s, want now (%s)", formatTime(j.RunAt), formatTime(t0))
		case req.RunAt != nil && func() bool { asked, _ := time.Parse(time.RFC3339Nano, *req.RunAt); return j.RunAt.Before(asked) }():
			t.Errorf("run_at %s stored as %s: it would fire early", *req.RunAt, formatTime(j.RunAt))
		case !j.RunAt.Equal(j.RunAt.Truncate(time.Millisecond)) || j.RunAt.Location() != time.UTC:
			t.Errorf("run_at %s is not UTC milliseconds", j.RunAt)
		case len(j.Payload) > fuzzLimit:
			t.Errorf("payload of %d bytes accepted", len(j.Payload))
		case j.CallbackURL != "" && (callback.CheckURL(j.CallbackURL) != nil || callback.CheckTarget(j.CallbackURL) != nil):
			t.Errorf("callback_url %q accepted", j.CallbackURL)
		case j.Method != "" && !strings.Contains(" POST PUT PATCH DELETE GET ", " "+j.Method+" "):
			t.Errorf("method %q accepted", j.Method)
		case j.MaxAttempts < 0 || j.MaxAttempts > maxAttemptsCap:
			t.Errorf("max_attempts %d accepted", j.MaxAttempts)
		case j.Timeout != 0 && (j.Timeout < minTimeout || j.Timeout > maxTimeout):
			t.Errorf("timeout %s accepted", j.Timeout)
		case j.ContentType != "" && func() bool { _, _, err := mime.ParseMediaType(j.ContentType); return err != nil }():
			t.Errorf("Content-Type %q accepted", j.ContentType)
		case j.Create.OnConflict == kairos.ConflictDebounce && (j.Create.MaxDelay <= 0 || j.Create.MaxDelay > kairos.MaxDebounceDelay),
			j.Create.OnConflict != kairos.ConflictDebounce && j.Create.MaxDelay != 0:
			t.Errorf("on_conflict %q with max_delay %s accepted", j.Create.OnConflict, j.Create.MaxDelay)
		case j.Create.DedupKey != "" && (req.ID != nil || j.Create.OnConflict != "" || utf8.RuneCountInString(j.Create.DedupKey) > kairos.MaxDedupKey ||
			!utf8.ValidString(j.Create.DedupKey) || j.Create.DedupWindow < time.Second || j.Create.DedupWindow > kairos.MaxDedupWindow),
			j.Create.DedupKey == "" && j.Create.DedupWindow != 0:
			t.Errorf("dedup_key %q with window %s accepted (id %v, on_conflict %q)", j.Create.DedupKey, j.Create.DedupWindow, req.ID, j.Create.OnConflict)
		case req.ExpiresAt != nil && req.TTL != nil:
			t.Error("expires_at and ttl accepted together")
		case !j.ExpiresAt.IsZero() && (j.ExpiresAt.Before(j.RunAt) || !j.ExpiresAt.Equal(j.ExpiresAt.Truncate(time.Millisecond)) || j.ExpiresAt.Location() != time.UTC):
			t.Errorf("expires_at %s accepted for run_at %s", j.ExpiresAt, j.RunAt)
		case req.ExpiresAt != nil && func() bool { asked, _ := time.Parse(time.RFC3339Nano, *req.ExpiresAt); return j.ExpiresAt.After(asked) }():
			t.Errorf("expires_at %s stored as %s: an attempt could start after it", *req.ExpiresAt, formatTime(j.ExpiresAt))
		case (req.ExpiresAt != nil || req.TTL != nil) != !j.ExpiresAt.IsZero() && !(req.TTL != nil && j.RunAt.IsZero()):
			t.Errorf("expires_at %v, ttl %v: expiry %s", req.ExpiresAt, req.TTL, j.ExpiresAt)
		case j.Priority < 0 || j.Priority > kairos.MaxPriority:
			t.Errorf("priority %d accepted", j.Priority)
		}
		if _, ok := j.Headers["Content-Type"]; ok {
			t.Error("Content-Type left among the headers")
		}
		checkAcceptedHeaders(t, j.Headers)
		checkBackoff(t, j.BackoffInitial, j.BackoffMax)
		if !utf8.Valid(j.Payload) || !utf8.ValidString(j.ContentType) {
			return // a JSON string cannot carry these bytes back
		}

		canon := canonicalJob(t, j)
		var req2 jobRequest
		if err := decodeBytes(canon, &req2); err != nil {
			t.Fatalf("canonical form %s: %v", canon, err)
		}
		j2, err := req2.toJob("acme", "orders", t0, fuzzLimit, false)
		if err != nil {
			t.Fatalf("canonical form %s: %v", canon, err)
		}
		if j.Create.DedupKey != "" {
			j2.ID = j.ID // generated again
		}
		if d := cmp.Diff(j, j2, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("job read back from %s (-first +second):\n%s", canon, d)
		}
		// The payload's schema is any JSON, and a number such as 1e999 is
		// JSON that Go cannot hold in an any: check the rest.
		bare := j
		bare.Payload = nil
		specAccepts(t, "JobRequest", canonicalJob(t, bare))
	})
}

// FuzzDecodeTopicRequest does for topic bodies what FuzzDecodeJobRequest
// does for jobs.
func FuzzDecodeTopicRequest(f *testing.F) {
	addSpecExamples(f, "PUT", "/v1/topics/{topic}")
	for _, s := range []string{
		`{"callback_url":"https://example.com"}`, `{"callback_url":""}`, `{}`, `{"callback_url":"https://example.com","concurrency":1000}`,
		`{"callback_url":"https://example.com","concurrency":0}`, `{"callback_url":"https://example.com","method":"Patch","timeout":"15m"}`,
		`{"callback_url":"https://example.com","headers":{"content-type":"text/plain"}}`, `{"callback_url":"https://u@example.com"}`,
		`{"callback_url":"https://example.com","backoff":{}}`, `{"callback_url":"https://example.com","backoff":{"initial":"2h"}}`,
		`{"callback_url":"https://example.com","backoff":null}`, `{"Callback_URL":"https://example.com"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req topicRequest
		if err := decodeBytes(body, &req); err != nil {
			checkRefusal(t, err)
			return
		}
		tp, err := req.toTopic("acme", "orders", false)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		switch {
		case callback.CheckURL(tp.CallbackURL) != nil || callback.CheckTarget(tp.CallbackURL) != nil:
			t.Errorf("callback_url %q accepted", tp.CallbackURL)
		case tp.Method != "" && !strings.Contains(" POST PUT PATCH DELETE GET ", " "+tp.Method+" "):
			t.Errorf("method %q accepted", tp.Method)
		case tp.MaxAttempts < 0 || tp.MaxAttempts > maxAttemptsCap:
			t.Errorf("max_attempts %d accepted", tp.MaxAttempts)
		case tp.Timeout != 0 && (tp.Timeout < minTimeout || tp.Timeout > maxTimeout):
			t.Errorf("timeout %s accepted", tp.Timeout)
		case tp.Concurrency < 0 || tp.Concurrency > maxConcurrency:
			t.Errorf("concurrency %d accepted", tp.Concurrency)
		}
		checkAcceptedHeaders(t, tp.Headers)
		checkBackoff(t, tp.BackoffInitial, tp.BackoffMax)

		m := obj{"callback_url": tp.CallbackURL}
		if tp.Method != "" {
			m["method"] = tp.Method
		}
		if len(tp.Headers) > 0 {
			m["headers"] = tp.Headers
		}
		if tp.Timeout != 0 {
			m["timeout"] = tp.Timeout.String()
		}
		if tp.MaxAttempts != 0 {
			m["max_attempts"] = tp.MaxAttempts
		}
		if tp.Concurrency != 0 {
			m["concurrency"] = tp.Concurrency
		}
		addBackoff(m, tp.BackoffInitial, tp.BackoffMax)
		canon := marshal(t, m)
		var req2 topicRequest
		if err := decodeBytes(canon, &req2); err != nil {
			t.Fatalf("canonical form %s: %v", canon, err)
		}
		tp2, err := req2.toTopic("acme", "orders", false)
		if err != nil {
			t.Fatalf("canonical form %s: %v", canon, err)
		}
		if d := cmp.Diff(tp, tp2, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("topic read back from %s (-first +second):\n%s", canon, d)
		}
		specAccepts(t, "TopicRequest", canon)
	})
}

// FuzzParseSchedule feeds run_at and delay strings through schedule,
// parseRunAt and parseDuration: accepted times are within bounds and in
// UTC milliseconds, never before the instant asked for and less than a
// millisecond after it, they read back the same once formatted, and every
// duration accepted matches the duration pattern of openapi.yaml.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []struct {
		runAt, delay string
		which        uint8
	}{
		{"2026-11-21T10:30:00.250Z", "90s", 1}, {"2026-11-21T10:30:00.250Z", "90s", 2}, {"", "", 0}, {"x", "y", 3},
		{"2026-11-20T10:00:00Z", "43800h", 1}, {"2026-11-20T09:59:59.999Z", "43800h0m0.001s", 1},
		{"2031-11-20T10:00:00Z", "-0", 2}, {"2031-11-20T10:00:00.0000001Z", ".5s", 2}, {"2026-11-21T10:00:00,5Z", "1.h", 2},
		{"2026-11-21T10:00:00+23:59", "5µs", 2}, {"2026-11-21t10:00:00z", "5μs", 2}, {"2026-02-29T10:00:00Z", "1us1ns", 2},
		{"0000-01-01T00:00:00Z", "9223372036854775807ns", 2}, {"9999-12-31T23:59:59.999999999Z", "2562047h47m16.854775808s", 2},
		{"2026-11-21T10:00:52.522490Z", "1.0000005s", 1}, {"2026-11-21T10:00:52.522490Z", "1.0000005s", 2},
		{"2026-11-21T10:00:52.522000001Z", "1ns", 3}, {"2026-11-21T11:00:00.0000001+01:00", "999999ns", 1},
		{"2026-11-21T10:00:52.5229999999Z", "1d12h", 2}, {"", "1825d", 2}, {"", "1825d1ns", 2}, {"", "0.5d", 2},
		{"", "", 4}, {"2026-11-21T10:00:00.0001Z", "", 5}, {"", "1us", 6},
	} {
		f.Add(s.runAt, s.delay, s.which)
	}
	delayPattern := regexp.MustCompile(mustSpec(f).doc.Components.Schemas["Delay"].Value.Pattern)
	f.Fuzz(func(t *testing.T, runAt, delay string, which uint8) {
		var ra, dl *string
		if which&1 != 0 {
			ra = &runAt
		}
		if which&2 != 0 {
			dl = &delay
		}
		var fe fieldErrors
		at := schedule(&fe, "jobs[7].", ra, dl, t0, which&4 != 0)
		if len(fe) > 0 {
			for _, e := range fe {
				if e.Field != "jobs[7].run_at" && e.Field != "jobs[7].delay" {
					t.Errorf("field %q", e.Field)
				}
			}
		} else {
			if (ra == dl && which&4 == 0) || (ra != nil && dl != nil) {
				t.Fatalf("accepted run_at %v and delay %v together", ra, dl)
			}
			asked := t0 // neither: now
			if ra != nil {
				asked, _ = time.Parse(time.RFC3339Nano, runAt)
			}
			if dl != nil {
				d, _ := duration.Parse(delay)
				asked = t0.Add(d)
			}
			if at.Before(asked) || !at.Before(asked.Add(time.Millisecond)) {
				t.Errorf("asked for %s, stored %s: not the first millisecond at or after it", asked.Format(time.RFC3339Nano), formatTime(at))
			}
			if at.Before(t0.Add(-maxPast)) || at.After(t0.Add(maxFuture)) {
				t.Errorf("time %s out of bounds accepted", at)
			}
			if !at.Equal(at.Truncate(time.Millisecond)) || at.Location() != time.UTC {
				t.Errorf("time %s is not UTC milliseconds", at)
			}
			var fe2 fieldErrors
			if again := parseRunAt(&fe2, "run_at", formatTime(at), t0); !again.Equal(at) || len(fe2) > 0 {
				t.Errorf("%s read back as %s (%v)", formatTime(at), again, fe2)
			}
		}

		var fd fieldErrors
		parseDuration(&fd, "delay", delay, -1<<63, 1<<63-1)
		if len(fd) == 0 && !delayPattern.MatchString(delay) {
			t.Errorf("Go accepts duration %q but openapi.yaml's pattern refuses it", delay)
		}
		if d, err := duration.Parse(delay); err == nil && d >= 0 && d <= maxFuture {
			var fd fieldErrors
			if got := parseDuration(&fd, "delay", delay, 0, maxFuture); got != d || len(fd) > 0 {
				t.Errorf("delay %q within range refused: %v", delay, fd)
			}
		}
	})
}

// FuzzValidName holds the hand-written name checks to the patterns that
// openapi.yaml states for topic names and job ids.
func FuzzValidName(f *testing.F) {
	schemas := mustSpec(f).doc.Components.Schemas
	topicPattern := regexp.MustCompile(schemas["TopicName"].Value.Pattern)
	idPattern := regexp.MustCompile(schemas["JobID"].Value.Pattern)
	for _, s := range []string{"", "a", "orders", "order-1.v2_x", "-x", ".x", "a:b~c@d", "a/b", "a b", "é",
		"a\n", strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("b", 128), strings.Repeat("b", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validTopic(s), topicPattern.MatchString(s); got != want {
			t.Errorf("validTopic(%q) = %v, openapi.yaml says %v", s, got, want)
		}
		if got, want := validID(s), idPattern.MatchString(s); got != want {
			t.Errorf("validID(%q) = %v, openapi.yaml says %v", s, got, want)
		}
	})
}

// FuzzFormatTime holds the hand-written time format to time.Format.
func FuzzFormatTime(f *testing.F) {
	for _, ms := range []int64{0, 1, 999, 1_763_721_000_250, -1, -62_135_596_800_000, 253_402_300_799_999, 253_402_300_800_000, -62_135_596_800_001} {
		f.Add(ms, int64(0))
	}
	f.Add(int64(1_763_721_000_250), int64(999_999))
	f.Fuzz(func(t *testing.T, ms, extraNS int64) {
		at := time.UnixMilli(ms).Add(time.Duration(extraNS % 1_000_000))
		if ms == 0 && extraNS == 0 {
			at = time.Time{} // shown as ""
		}
		want := ""
		if !at.IsZero() {
			want = at.UTC().Format(timeLayout)
		}
		if got := formatTime(at); got != want {
			t.Errorf("formatTime(%v) = %q, time.Format gives %q", at, got, want)
		}
	})
}

// addBackoff puts the canonical form of a backoff into m, if one is set.
func addBackoff(m obj, initial, max time.Duration) {
	if initial == 0 && max == 0 {
		return
	}
	b := obj{}
	if initial != 0 {
		b["initial"] = initial.String()
	}
	if max != 0 {
		b["max"] = max.String()
	}
	m["backoff"] = b
}

// FuzzValidHeader holds validHeaderName and validHeaderValue to x/net's
// httpguts, the rule they copy.
func FuzzValidHeader(f *testing.F) {
	for _, s := range []string{"", "X-Team", "x team", "a:b", "Ä", "v\tw", "line\nbreak", "del\x7f", "~!#$%&'*+-.^_`|", "\x00", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validHeaderName(s), httpguts.ValidHeaderFieldName(s); got != want {
			t.Errorf("validHeaderName(%q) = %v, httpguts says %v", s, got, want)
		}
		if got, want := validHeaderValue(s), httpguts.ValidHeaderFieldValue(s); got != want {
			t.Errorf("validHeaderValue(%q) = %v, httpguts says %v", s, got, want)
		}
	})
}
