package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/duration"
	recur "github.com/kairos-sh/kairos/internal/schedule"
)

// scheduleFields are the top-level fields of a schedule request, as a 400
// names them (a nested one as "headers.X" or "backoff.initial").
var scheduleFields = map[string]bool{"cron": true, "every": true, "timezone": true, "start_at": true,
	"end_at": true, "catch_up": true, "paused": true, "payload": true, "callback_url": true, "method": true,
	"headers": true, "max_attempts": true, "timeout": true, "backoff": true, "body": true,
	"overlap": true, "jitter": true, "max_runs": true}

// lockedBuffer is a log sink the server writes and the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// FuzzScheduleRequest sends bodies to PUT /v1/topics/{topic}/schedules/{id}
// through the real handler on a real Redis, once on a registered topic and
// once on an unknown one (where a schedule naming its callback_url
// registers the topic). Nothing panics or answers 5xx. A refusal is a 4xx
// problem+json, a 400 or 413 naming its fields, and leaves every key and
// value in Redis as it was. An accepted schedule has one pattern, a zone,
// bounds in order and an instant after now (its first next run unless it
// is paused), reads back the same with GET, is stored again unchanged
// from the fields its answer shows, and is a request openapi.yaml accepts.
// The seeds run in the normal suite.
func FuzzScheduleRequest(f *testing.F) {
	addSpecExamples(f, "PUT", "/v1/topics/{topic}/schedules/{id}")
	for _, s := range []string{
		// valid
		`{"cron":"0 9 * * MON-FRI","timezone":"Europe/Paris"}`, `{"cron":"*/5 * * * * *"}`, `{"cron":" @daily ","timezone":"America/New_York","catch_up":"all"}`,
		`{"cron":"@hourly","paused":true}`, `{"cron":"30 2 29 3 *","timezone":"Europe/Berlin"}`, `{"cron":"30 1 1 11 *","timezone":"America/New_York"}`,
		`{"cron":"0 0 29 2 *"}`, `{"cron":"0 0 1 1 *","timezone":"Pacific/Kiritimati"}`, `{"cron":"0 12 * * 0,7"}`,
		`{"every":"90s"}`, `{"every":"1h30m","timezone":"Asia/Kolkata"}`, `{"every":"24h","start_at":"2026-11-20T12:00:00Z"}`,
		`{"every":"1s","start_at":"2026-11-21T10:00:00.250Z","end_at":"2026-11-21T11:00:00Z","catch_up":"none"}`,
		`{"every":"1s","start_at":"2026-11-21T10:00:00.0005+01:00"}`, `{"every":"1m","end_at":"2031-11-20T10:00:00Z"}`,
		`{"every":"1m","payload":{"a":[1,2,{"b":null}]},"headers":{"X-A":"1"},"max_attempts":3,"timeout":"5s","backoff":{"initial":"1s","max":"1m"},"method":"put"}`,
		`{"every":"1m","payload":"\"text\"","headers":{"content-type":"text/plain"}}`, `{"every":"1m","payload":null,"paused":false}`,
		`{"every":"1m","callback_url":"https://hooks.example.com/fresh"}`, `{"cron":"@weekly","callback_url":"HTTPS://Example.com:8443/x?y#z","paused":true}`,
		`{"every":"1m","overlap":"skip","max_runs":3}`, `{"every":"1m","overlap":"buffer_one","jitter":"30s"}`,
		`{"cron":"0 9 * * *","jitter":"1h","overlap":"allow","max_runs":0}`, `{"every":"1h","jitter":"1.5ms","max_runs":1000000000}`,
		// invalid
		`{}`, `{"every":"1m","overlap":"queue"}`, `{"every":"1m","overlap":""}`, `{"every":"1m","jitter":"1m"}`, `{"every":"1m","jitter":"-1s"}`,
		`{"every":"1m","jitter":"8d"}`, `{"every":"1m","jitter":30}`, `{"every":"1m","max_runs":-1}`, `{"every":"1m","max_runs":1.5}`,
		`{"every":"1m","max_runs":1000000001}`, `{"every":"1m","max_runs":"3"}`, `{"cron":"0,1 * * * *","jitter":"2m"}`, `{"cron":"","every":""}`, `{"cron":"* * * *"}`, `{"cron":"0 9 * * MON-FRI","every":"1m"}`, `{"cron":"61 * * * *"}`,
		`{"cron":"0 0 30 2 *"}`, `{"cron":"@every 1m"}`, `{"cron":"@reboot"}`, `{"cron":"0 9 * * MON-XYZ"}`, `{"cron":"*/0 * * * *"}`,
		`{"every":"0s"}`, `{"every":"-1s"}`, `{"every":"500ms"}`, `{"every":"1y"}`, `{"every":90}`, `{"every":"9999999h"}`,
		`{"every":"1m","timezone":"Mars/Olympus"}`, `{"every":"1m","timezone":"Local"}`, `{"cron":"0 9 * * *","timezone":"utc"}`,
		`{"every":"1m","timezone":"../../etc/passwd"}`, `{"every":"1m","timezone":""}`,
		`{"every":"1m","start_at":"yesterday"}`, `{"every":"1m","start_at":"2026-11-19T10:00:00Z"}`, `{"every":"1m","start_at":"2026-11-21T10:00:00,5Z"}`,
		`{"every":"1m","start_at":"2026-11-22T00:00:00Z","end_at":"2026-11-21T12:00:00Z"}`, `{"every":"1m","end_at":"2026-11-21T09:00:00Z"}`,
		`{"every":"1m","start_at":"2026-11-21T08:00:00Z","end_at":"2026-11-21T09:00:00Z"}`, `{"cron":"0 9 * * *","start_at":"2026-11-21T08:00:00Z","end_at":"2026-11-21T09:30:00Z"}`,
		`{"every":"1m","end_at":"2040-01-01T00:00:00Z"}`, `{"every":"1m","catch_up":"some"}`, `{"every":"1m","catch_up":"ONE"}`, `{"every":"1m","catch_up":null}`,
		`{"every":"1m","paused":"yes"}`, `{"every":"1m","payload":"` + strings.Repeat("x", fuzzLimit) + `"}`, `{"every":"1m","payload":1e999}`,
		`{"every":"1m","callback_url":"http://127.0.0.1/x"}`, `{"every":"1m","max_attempts":0}`, `{"every":"1m","headers":{"Kairos-Schedule-Id":"x"}}`,
		`{"every":"1m","run_at":"2026-11-21T10:00:00Z"}`, `{"every":"1m","delay":"1s"}`, `{"every":"1m","id":"x"}`, `{"EVERY":"1m"}`,
		`{"every":"1m","backoff":{"bogus":1}}`, `null`, `[]`, `""`, `{`, `{"every":"1m"} x`, "{\"every\":\"1m\",\"payload\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	logs := &lockedBuffer{}
	e := newEnv(f, Config{MaxPayload: fuzzLimit, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	acme := e.token(f, "acme", false)
	e.putTopic(f, acme, "orders", obj{"callback_url": hook})
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, topic := range []string{"orders", "fresh"} {
			logs.take()
			before := e.snapshot(t)
			path := "/v1/topics/" + topic + "/schedules/s"
			opts := []reqOption{specLenient()}
			if !payloadFitsSpec(body) {
				opts = []reqOption{offSpec()}
			}
			res := e.do(t, "PUT", path, acme, body, opts...)
			switch {
			case res.Status >= 500 || res.Status < 200 || (res.Status >= 300 && res.Status < 400):
				t.Fatalf("PUT %s: status %d: %s\nlog: %s", path, res.Status, truncate(res.Body), logs.take())
			case res.Status >= 400:
				p := wantProblem(t, res, res.Status)
				checkScheduleRefusal(t, res.Status, p)
				e.unchanged(t, before)
			default:
				checkAcceptedSchedule(t, e, acme, path, body, res)
				if topic == "fresh" { // unknown again
					e.do(t, "DELETE", path, acme, nil)
					if res := e.do(t, "DELETE", "/v1/topics/fresh", acme, nil); res.Status != http.StatusNoContent {
						t.Fatalf("delete topic fresh: %d %s", res.Status, res.Body)
					}
				}
			}
		}
	})
}

// checkScheduleRefusal checks that a 400 or 413 names fields of the request.
func checkScheduleRefusal(t *testing.T, status int, p Problem) {
	t.Helper()
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
		return
	}
	if len(p.Errors) == 0 {
		t.Fatalf("%d without fields: %+v", status, p)
	}
	if status == http.StatusRequestEntityTooLarge && (len(p.Errors) != 1 || (p.Errors[0].Field != "payload" && p.Errors[0].Field != "body")) {
		t.Errorf("413 on %+v", p.Errors)
	}
	for _, fe := range p.Errors {
		if fe.Message == "" {
			t.Errorf("field %q without a reason", fe.Field)
		}
		if strings.HasPrefix(fe.Message, "unknown field") {
			continue // named as sent, and "" is a key JSON allows
		}
		if top, _, _ := strings.Cut(fe.Field, "."); !scheduleFields[top] {
			t.Errorf("the refusal names %q, not a field of a schedule request: %+v", fe.Field, p)
		}
	}
}

// checkAcceptedSchedule checks the answer to an accepted PUT of body.
func checkAcceptedSchedule(t *testing.T, e *env, authz, path string, body []byte, res result) {
	t.Helper()
	v := want[scheduleResponse](t, res, res.Status)
	if res.Status != http.StatusCreated && res.Status != http.StatusOK {
		t.Fatalf("status %d", res.Status)
	}
	if res.Spec.RequestErr != nil || !payloadFitsSpec(body) {
		// The server reads a null as an absent field; and a payload such
		// as 1e999 is JSON that the spec's decoder cannot hold in an any:
		// check the rest as sent.
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("accepted body is no JSON object: %v", err)
		}
		delete(m, "payload")
		specAccepts(t, "ScheduleRequest", marshal(t, dropNulls(m)))
	}
	switch {
	case (v.Cron == "") == (v.Every == ""):
		t.Errorf("cron %q and every %q", v.Cron, v.Every)
	case v.Timezone == "":
		t.Error("no timezone shown")
	case v.CatchUp != kairos.CatchUpOne && v.CatchUp != kairos.CatchUpNone && v.CatchUp != kairos.CatchUpAll:
		t.Errorf("catch_up %q", v.CatchUp)
	case len(v.NextRuns) > nextRunsShown:
		t.Errorf("%d next runs", len(v.NextRuns))
	}
	sc := kairos.Schedule{ID: "s", Cron: v.Cron, Timezone: v.Timezone, StartAt: parseShown(t, v.StartAt), EndAt: parseShown(t, v.EndAt),
		CreatedAt: parseShown(t, v.CreatedAt)}
	if v.Jitter != "" {
		d, err := duration.Parse(v.Jitter)
		if err != nil {
			t.Fatalf("jitter %q shown: %v", v.Jitter, err)
		}
		sc.Jitter = d
	}
	if v.Every != "" {
		d, err := time.ParseDuration(v.Every)
		if err != nil {
			t.Fatalf("every %q shown: %v", v.Every, err)
		}
		sc.Every = d
	}
	if !sc.StartAt.IsZero() && !sc.EndAt.IsZero() && sc.EndAt.Before(sc.StartAt) {
		t.Errorf("end_at %s before start_at %s", v.EndAt, v.StartAt)
	}
	p, err := recur.Of(sc)
	if err != nil {
		t.Fatalf("the schedule as shown does not parse: %v", err)
	}
	now := e.clock.Now()
	next := p.NextN(now, 1)
	if len(next) == 0 {
		t.Fatalf("accepted a schedule that never fires after now (%s): %s", ms(now), res.Body)
	}
	if !v.Paused && (len(v.NextRuns) == 0 || v.NextRuns[0] != ms(next[0])) {
		t.Errorf("next runs %v, want the first at %s", v.NextRuns, ms(next[0]))
	}
	for i, r := range v.NextRuns {
		at := parseShown(t, r)
		if !at.After(now) || (i > 0 && !at.After(parseShown(t, v.NextRuns[i-1]))) ||
			(!sc.StartAt.IsZero() && at.Before(sc.StartAt)) || (!sc.EndAt.IsZero() && at.After(sc.EndAt)) {
			t.Errorf("next runs %v out of order or bounds (now %s, start %q, end %q)", v.NextRuns, ms(now), v.StartAt, v.EndAt)
		}
	}
	opt := specLenient()
	if !payloadFitsSpec(body) {
		opt = offSpec()
	}
	ignore := cmpopts.IgnoreFields(scheduleResponse{}, "Result")
	got := want[scheduleResponse](t, e.do(t, "GET", path, authz, nil, opt), http.StatusOK)
	if d := cmp.Diff(v, got, ignore); d != "" {
		t.Errorf("GET after PUT (-put +get):\n%s", d)
	}

	// The pattern's fields as shown, put again, store the same schedule.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("accepted body is no JSON object: %v", err)
	}
	for _, k := range []string{"cron", "every", "timezone", "start_at", "end_at", "catch_up", "paused", "overlap", "jitter", "max_runs"} {
		delete(m, k)
	}
	shown := map[string]any{"cron": v.Cron, "every": v.Every, "timezone": v.Timezone, "start_at": v.StartAt,
		"end_at": v.EndAt, "catch_up": v.CatchUp, "paused": v.Paused, "overlap": v.Overlap, "jitter": v.Jitter}
	if v.MaxRuns != 0 {
		shown["max_runs"] = v.MaxRuns
	}
	for k, x := range shown {
		if x != "" {
			m[k] = marshal(t, x)
		}
	}
	again := want[scheduleResponse](t, e.do(t, "PUT", path, authz, marshal(t, m), opt), http.StatusOK)
	if d := cmp.Diff(v, again, ignore); d != "" {
		t.Errorf("put again from %s (-first +again):\n%s", marshal(t, m), d)
	}
}

// parseShown reads a time as the API shows it ("" is zero).
func parseShown(t *testing.T, s string) time.Time {
	t.Helper()
	if s == "" {
		return time.Time{}
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q shown: %v", s, err)
	}
	return at
}

// payloadFitsSpec reports whether body is no JSON object, or its payload
// is absent or a value the spec's decoder can hold (1e999 is JSON that no
// float64 holds).
func payloadFitsSpec(body []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m["payload"] == nil {
		return true
	}
	var v any
	return json.Unmarshal(m["payload"], &v) == nil
}

// dropNulls removes the object members whose value is null, at any depth.
func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			if y == nil {
				delete(x, k)
			} else {
				x[k] = dropNulls(y)
			}
		}
	case []any:
		for i, y := range x {
			x[i] = dropNulls(y)
		}
	}
	return v
}
