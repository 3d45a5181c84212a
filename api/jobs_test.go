package api

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

func TestJobCreateGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})

	runAt := t0.Add(30 * time.Minute)
	got := e.createJob(t, acme, "orders", obj{
		"id": "order-8412", "run_at": "2026-11-21T10:30:00.000Z",
		"payload": obj{"order_id": 8412}, "headers": obj{"x-trace": "abc", "Content-Type": "application/json; charset=utf-8"},
		"max_attempts": 3, "timeout": "5s", "backoff": obj{"initial": "2s"}, "method": "patch",
		"callback_url": hook + "/own",
	})
	wantJob := jobResponse{
		ID: "order-8412", Topic: "orders", Tenant: "acme", Kind: kairos.KindJob, State: kairos.StateScheduled,
		RunAt: ms(runAt), NextRunAt: ms(runAt), CreatedAt: ms(t0), CallbackURL: hook + "/own",
		CallbackSettingsResponse: CallbackSettingsResponse{
			Method: "PATCH", Headers: map[string]string{"X-Trace": "abc", "Content-Type": "application/json; charset=utf-8"},
			Timeout: "5s", MaxAttempts: 3, Backoff: &backoffResponse{Initial: "2s"},
		},
		Payload: json.RawMessage(`{"order_id":8412}`),
	}
	created := wantJob
	created.Result = resultCreated
	if d := cmp.Diff(created, got); d != "" {
		t.Errorf("created job (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantJob, e.getJob(t, acme, "orders", "order-8412")); d != "" {
		t.Errorf("GET job (-want +got):\n%s", d)
	}

	// No id: one is generated. A job due now is ready at once.
	got = e.createJob(t, acme, "orders", obj{"delay": "0s", "payload": "plain text"})
	if !regexp.MustCompile(`^job_[a-z2-7]{16}$`).MatchString(got.ID) {
		t.Errorf("generated id %q", got.ID)
	}
	if got.State != kairos.StateReady || got.RunAt != ms(t0) {
		t.Errorf("due job: state %s run_at %s, want ready at %s", got.State, got.RunAt, ms(t0))
	}
	if string(got.Payload) != `"plain text"` {
		t.Errorf("payload %s", got.Payload)
	}

	// run_at is kept to the millisecond, rounded up so that nothing fires
	// before the instant asked for; delay counts from the Redis clock.
	for in, want := range map[string]string{
		"2026-11-21T12:00:00.2506+02:00":      "2026-11-21T10:00:00.251Z",
		"2026-11-21T10:00:52.522490Z":         "2026-11-21T10:00:52.523Z",
		"2026-11-21T10:00:52.522000001Z":      "2026-11-21T10:00:52.523Z",
		"2026-11-21T10:00:52.522Z":            "2026-11-21T10:00:52.522Z",
		"2026-11-21T10:00:52.999999999-00:00": "2026-11-21T10:00:53.000Z",
	} {
		if got := e.createJob(t, acme, "orders", obj{"run_at": in}); got.RunAt != want {
			t.Errorf("run_at %s stored as %s, want %s", in, got.RunAt, want)
		}
	}
	got = e.createJob(t, acme, "orders", obj{"delay": "1.5h"})
	if want := ms(t0.Add(90 * time.Minute)); got.RunAt != want {
		t.Errorf("run_at %s, want %s", got.RunAt, want)
	}
	// days are a duration unit too
	for in, d := range map[string]time.Duration{"1d": 24 * time.Hour, "1d12h": 36 * time.Hour, "0.5d": 12 * time.Hour} {
		if got := e.createJob(t, acme, "orders", obj{"delay": in}); got.RunAt != ms(t0.Add(d)) {
			t.Errorf("delay %s: run_at %s, want %s", in, got.RunAt, ms(t0.Add(d)))
		}
	}
	// a delay finer than a millisecond lands on the next one, never before
	// now + delay; the Redis clock itself may read between milliseconds
	e.clock.Set(t0.Add(250 * time.Microsecond))
	for in, want := range map[string]time.Duration{"1.0000005s": 1001 * time.Millisecond, "0s": time.Millisecond, "1ms": 2 * time.Millisecond} {
		if got := e.createJob(t, acme, "orders", obj{"delay": in}); got.RunAt != ms(t0.Add(want)) {
			t.Errorf("delay %s from %s: run_at %s, want %s", in, e.clock.Now().Format(time.RFC3339Nano), got.RunAt, ms(t0.Add(want)))
		}
	}
	// neither run_at nor delay: now (rounded up as well)
	if got := e.createJob(t, acme, "orders", obj{"payload": 1}); got.RunAt != ms(t0.Add(time.Millisecond)) || got.State != kairos.StateScheduled {
		t.Errorf("neither run_at nor delay: %s at %s, want scheduled at %s", got.State, got.RunAt, ms(t0.Add(time.Millisecond)))
	}
	e.clock.Set(t0)
	if got := e.createJob(t, acme, "orders", obj{}); got.RunAt != ms(t0) || got.State != kairos.StateReady {
		t.Errorf("empty body: %s at %s, want ready at %s", got.State, got.RunAt, ms(t0))
	}
	// The bounds themselves are allowed.
	e.createJob(t, acme, "orders", obj{"run_at": ms(t0.Add(-24 * time.Hour))})
	e.createJob(t, acme, "orders", obj{"run_at": ms(t0.Add(maxFuture))})
	e.createJob(t, acme, "orders", obj{"delay": "43800h"})

	wantProblem(t, e.do(t, "GET", "/v1/topics/orders/jobs/nope", acme, nil), http.StatusNotFound)
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders/jobs/-bad-id", acme, nil), http.StatusNotFound)
	wantProblem(t, e.do(t, "GET", "/v1/topics/nope/jobs/order-8412", acme, nil), http.StatusNotFound)
}

// TestJobUpsert replaces a job that has not fired, answering 200 and
// "replaced", and makes a new one (201, "created") from an id that is free
// again.
func TestJobUpsert(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})

	first := e.createJob(t, acme, "orders", obj{"id": "o1", "delay": "1h", "payload": obj{"v": 1}})
	if first.Result != resultCreated {
		t.Errorf("first create: result %q, want created", first.Result)
	}
	e.clock.Add(time.Minute)
	second := want[jobResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"id": "o1", "delay": "2h", "payload": obj{"v": 2}}), http.StatusOK)
	if second.Result != resultReplaced {
		t.Errorf("second create: result %q, want replaced", second.Result)
	}
	if second.CreatedAt != first.CreatedAt {
		t.Errorf("replaced job created_at %s, want the first's %s", second.CreatedAt, first.CreatedAt)
	}
	if want := ms(t0.Add(time.Minute + 2*time.Hour)); second.RunAt != want {
		t.Errorf("replaced run_at %s, want %s", second.RunAt, want)
	}
	got := e.getJob(t, acme, "orders", "o1")
	if string(got.Payload) != `{"v":2}` || got.RunAt != second.RunAt {
		t.Errorf("stored job %+v", got)
	}
	list := want[listResponse](t, e.do(t, "GET", "/v1/topics/orders/jobs", acme, nil), http.StatusOK)
	if len(list.Jobs) != 1 {
		t.Errorf("listed %d jobs after an upsert, want 1", len(list.Jobs))
	}
	wantCounts(t, e, "acme", map[kairos.State]int64{kairos.StateScheduled: 1})

	// Once delivered, or dead, the id makes a new job.
	want[jobResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"id": "o1", "delay": "0s"}), http.StatusOK)
	e.deliveredJob(t, "acme", "orders", "o1")
	e.clock.Add(time.Minute)
	again := e.createJob(t, acme, "orders", obj{"id": "o1", "delay": "1h"})
	if again.CreatedAt != ms(e.clock.Now()) || again.Attempts != 0 || again.State != kairos.StateScheduled || again.Result != resultCreated {
		t.Errorf("new job from a delivered id: %+v", again)
	}
	e.createJob(t, acme, "orders", obj{"id": "d1", "delay": "0s"})
	e.deadJob(t, "acme", "orders", "d1")
	if j := e.createJob(t, acme, "orders", obj{"id": "d1", "delay": "1h"}); j.Result != resultCreated {
		t.Errorf("new job from a dead id: %+v", j)
	}
}

func TestJobRescheduleCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "o1", "delay": "1h", "payload": obj{"v": 1}})

	got := want[jobResponse](t, e.do(t, "PATCH", "/v1/topics/orders/jobs/o1", acme, obj{"run_at": "2026-11-21T11:30:00Z"}), http.StatusOK)
	if want := "2026-11-21T11:30:00.000Z"; got.RunAt != want || got.NextRunAt != want || got.State != kairos.StateScheduled {
		t.Errorf("rescheduled: %+v", got)
	}
	got = want[jobResponse](t, e.do(t, "PATCH", "/v1/topics/orders/jobs/o1", acme, obj{"delay": "10m"}), http.StatusOK)
	if want := ms(t0.Add(10 * time.Minute)); got.RunAt != want {
		t.Errorf("rescheduled by delay: run_at %s, want %s", got.RunAt, want)
	}
	if string(got.Payload) != `{"v":1}` {
		t.Errorf("reschedule lost the payload: %s", got.Payload)
	}
	// finer than a millisecond rounds up, as a create's; days are a unit
	got = want[jobResponse](t, e.do(t, "PATCH", "/v1/topics/orders/jobs/o1", acme, obj{"run_at": "2026-11-21T11:30:00.000000001Z"}), http.StatusOK)
	if want := "2026-11-21T11:30:00.001Z"; got.RunAt != want {
		t.Errorf("rescheduled to 1ns past 11:30: run_at %s, want %s", got.RunAt, want)
	}
	got = want[jobResponse](t, e.do(t, "PATCH", "/v1/topics/orders/jobs/o1", acme, obj{"delay": "2d"}), http.StatusOK)
	if want := ms(t0.Add(48 * time.Hour)); got.RunAt != want {
		t.Errorf("rescheduled by 2d: run_at %s, want %s", got.RunAt, want)
	}
	// a reschedule must say where to
	wantFields(t, wantProblem(t, e.do(t, "PATCH", "/v1/topics/orders/jobs/o1", acme, obj{}), http.StatusBadRequest), "run_at")
	wantProblem(t, e.do(t, "PATCH", "/v1/topics/orders/jobs/nope", acme, obj{"delay": "1m"}), http.StatusNotFound)

	// A cancelled job stays readable as cancelled, is listed by that state,
	// and can be neither rescheduled nor replayed; a second cancel changes
	// nothing.
	if res := e.do(t, "DELETE", "/v1/topics/orders/jobs/o1", acme, nil); res.Status != http.StatusNoContent || len(res.Body) != 0 {
		t.Fatalf("cancel: %d %q", res.Status, res.Body)
	}
	got = e.getJob(t, acme, "orders", "o1")
	if got.State != kairos.StateCancelled || got.DoneAt != ms(t0) || got.NextRunAt != "" || string(got.Payload) != `{"v":1}` {
		t.Errorf("cancelled job: %+v", got)
	}
	if res := e.do(t, "DELETE", "/v1/topics/orders/jobs/o1", acme, nil); res.Status != http.StatusNoContent {
		t.Fatalf("cancel twice: %d %q", res.Status, res.Body)
	}
	list := want[listResponse](t, e.do(t, "GET", "/v1/topics/orders/jobs?state=cancelled", acme, nil), http.StatusOK)
	if len(list.Jobs) != 1 || list.Jobs[0].ID != "o1" || list.Jobs[0].State != kairos.StateCancelled {
		t.Errorf("?state=cancelled: %+v", list.Jobs)
	}
	if p := wantProblem(t, e.do(t, "PATCH", "/v1/topics/orders/jobs/o1", acme, obj{"delay": "1m"}), http.StatusConflict); !strings.Contains(p.Detail, "cancelled") {
		t.Errorf("reschedule a cancelled job: %q", p.Detail)
	}
	wantProblem(t, e.do(t, "POST", "/v1/topics/orders/jobs/o1/retry", acme, nil), http.StatusConflict)
	wantCounts(t, e, "acme", map[kairos.State]int64{kairos.StateCancelled: 1})

	// A delivered job can be neither cancelled nor rescheduled.
	e.createJob(t, acme, "orders", obj{"id": "o2", "delay": "0s"})
	e.deliveredJob(t, "acme", "orders", "o2")
	wantProblem(t, e.do(t, "DELETE", "/v1/topics/orders/jobs/o2", acme, nil), http.StatusConflict)
	wantProblem(t, e.do(t, "PATCH", "/v1/topics/orders/jobs/o2", acme, obj{"delay": "1m"}), http.StatusConflict)
	got = e.getJob(t, acme, "orders", "o2")
	if got.State != kairos.StateDelivered || got.DoneAt == "" || got.NextRunAt != "" || got.LastAttempt == nil || got.LastAttempt.Status != 204 {
		t.Errorf("delivered job: %+v", got)
	}
}

func TestJobRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "o1", "delay": "1h"})

	p := wantProblem(t, e.do(t, "POST", "/v1/topics/orders/jobs/o1/retry", acme, nil), http.StatusConflict)
	if !strings.Contains(p.Detail, "not dead") {
		t.Errorf("409 detail %q", p.Detail)
	}
	wantProblem(t, e.do(t, "POST", "/v1/topics/orders/jobs/nope/retry", acme, nil), http.StatusNotFound)

	e.createJob(t, acme, "orders", obj{"id": "o2", "delay": "0s", "max_attempts": 1})
	e.deadJob(t, "acme", "orders", "o2")
	dead := e.getJob(t, acme, "orders", "o2")
	wantLog := []attemptResponse{{N: 1, At: ms(t0), DurationMS: 1.5, Status: 500, Response: "boom"}}
	if d := cmp.Diff(wantLog, dead.AttemptLog); d != "" || dead.State != kairos.StateDead {
		t.Errorf("dead job state %s, attempt log (-want +got):\n%s", dead.State, d)
	}
	wantProblem(t, e.do(t, "PATCH", "/v1/topics/orders/jobs/o2", acme, obj{"delay": "1m"}), http.StatusConflict)
	dl := want[listResponse](t, e.do(t, "GET", "/v1/topics/orders/jobs?state=dead", acme, nil), http.StatusOK)
	if len(dl.Jobs) != 1 || dl.Jobs[0].ID != "o2" {
		t.Errorf("dead letters: %+v", dl.Jobs)
	}

	e.clock.Add(time.Minute)
	got := want[jobResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/o2/retry", acme, nil), http.StatusAccepted)
	if got.State != kairos.StateReady || got.Attempts != 1 {
		t.Errorf("replayed job: state %s attempts %d, want ready and 1 (numbers go on)", got.State, got.Attempts)
	}
	if got.ReplayedAfter != 1 || dead.ReplayedAfter != 0 {
		t.Errorf("replayed_after %d after the replay (%d before), want 1 (0): max_attempts counts the attempts after it",
			got.ReplayedAfter, dead.ReplayedAfter)
	}
	wantLog = append(wantLog, attemptResponse{N: 1, At: ms(t0.Add(time.Minute)), Event: "replay"})
	if d := cmp.Diff(wantLog, got.AttemptLog); d != "" {
		t.Errorf("replayed job's attempt log (-want +got):\n%s", d)
	}
	if got.LastAttempt == nil || got.LastAttempt.Status != 500 {
		t.Errorf("last_attempt %+v, want the failed attempt, not the replay", got.LastAttempt)
	}
	wantCounts(t, e, "acme", map[kairos.State]int64{kairos.StateScheduled: 1, kairos.StateReady: 1})
	// max_attempts 1 counts from the replay: attempt 2 is started, and is the last
	if j := e.next(t, "acme", "orders", "o2"); j.Attempts != 2 || j.AttemptsLeft() != 0 {
		t.Errorf("first attempt after the replay: attempt %d, %d left after it; want attempt 2, 0 left", j.Attempts, j.AttemptsLeft())
	}
}

// TestJobNoCallback refuses a job that has no callback URL anywhere, and
// says how to register one.
func TestJobNoCallback(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)

	before := e.snapshot(t)
	p := wantProblem(t, e.do(t, "POST", "/v1/topics/invoices/jobs", acme, obj{"delay": "1m"}), http.StatusBadRequest)
	wantFields(t, p, "callback_url")
	if msg := p.Errors[0].Message; !strings.Contains(msg, "PUT /v1/topics/invoices") || !strings.Contains(msg, "callback_url") {
		t.Errorf("message %q does not say how to register the topic", msg)
	}
	e.unchanged(t, before)

	// A job with its own URL registers the topic, with no URL of its own:
	// no answer claims one (the field is absent), and the job keeps its own.
	j := e.createJob(t, acme, "invoices", obj{"delay": "1m", "callback_url": hook})
	if j.CallbackURL != hook {
		t.Errorf("the job that registered its topic has callback_url %q, want its own %q", j.CallbackURL, hook)
	}
	res := e.do(t, "GET", "/v1/topics/invoices", acme, nil)
	tp := want[topicResponse](t, res, http.StatusOK)
	if tp.CallbackURL != "" || strings.Contains(string(res.Body), `"callback_url"`) {
		t.Errorf("implicit topic claims a callback: %s", res.Body)
	}
	if list := e.do(t, "GET", "/v1/topics", acme, nil); strings.Contains(string(list.Body), `"callback_url"`) {
		t.Errorf("the topic list claims a callback for the implicit topic: %s", list.Body)
	}
	// a batch and a schedule naming their own URL register theirs alike
	want[batchResponse](t, e.do(t, "POST", "/v1/topics/receipts/jobs/batch", acme, obj{"jobs": []obj{{"callback_url": hook}}}), http.StatusCreated)
	want[scheduleResponse](t, e.do(t, "PUT", "/v1/topics/digests/schedules/daily", acme, obj{"every": "1d", "callback_url": hook}), http.StatusCreated)
	for _, topic := range []string{"receipts", "digests"} {
		if res := e.do(t, "GET", "/v1/topics/"+topic, acme, nil); res.Status != http.StatusOK || strings.Contains(string(res.Body), `"callback_url"`) {
			t.Errorf("implicit topic %s: %d %s", topic, res.Status, res.Body)
		}
	}
	before = e.snapshot(t)
	p = wantProblem(t, e.do(t, "POST", "/v1/topics/invoices/jobs", acme, obj{"delay": "1m"}), http.StatusBadRequest)
	wantFields(t, p, "callback_url")
	if !strings.Contains(p.Errors[0].Message, "PUT /v1/topics/invoices") {
		t.Errorf("message %q does not say how to set the URL", p.Errors[0].Message)
	}
	e.unchanged(t, before)
}

// TestJobValidation sends one broken job per rule: each is refused with
// its status and field, and Redis is left as it was.
func TestJobValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "existing", "delay": "1h"})

	with := func(kv ...any) obj {
		o := obj{"delay": "1m"}
		for i := 0; i < len(kv); i += 2 {
			o[kv[i].(string)] = kv[i+1]
		}
		return o
	}
	past := ms(t0.Add(-24*time.Hour - time.Millisecond))
	future := ms(t0.Add(maxFuture + time.Millisecond))
	big := `"` + strings.Repeat("x", DefaultMaxPayload-1) + `"` // 1 byte over once quoted
	tests := []struct {
		name   string
		path   string
		body   any
		opts   []reqOption
		status int
		fields []string
		spec   bool // the spec refuses the request too
	}{
		{"id bad character", "orders", with("id", "a/b"), nil, 400, []string{"id"}, true},
		{"id starts with dash", "orders", with("id", "-a"), nil, 400, []string{"id"}, true},
		{"id too long", "orders", with("id", strings.Repeat("i", 129)), nil, 400, []string{"id"}, true},
		{"id empty", "orders", with("id", ""), nil, 400, []string{"id"}, true},
		{"topic name", "bad!topic", with(), nil, 404, nil, true},
		{"callback_url scheme", "orders", with("callback_url", "ftp://example.com"), nil, 400, []string{"callback_url"}, true},
		{"callback_url syntax", "orders", with("callback_url", "http://exa mple.com/"), nil, 400, []string{"callback_url"}, false},
		{"callback_url no host", "orders", with("callback_url", "https:///path"), nil, 400, []string{"callback_url"}, true},
		{"run_at too far past", "orders", obj{"run_at": past}, nil, 400, []string{"run_at"}, false},
		{"run_at too far ahead", "orders", obj{"run_at": future}, nil, 400, []string{"run_at"}, false},
		{"run_at syntax", "orders", obj{"run_at": "tomorrow"}, nil, 400, []string{"run_at"}, true},
		{"run_at without zone", "orders", obj{"run_at": "2026-11-21T10:30:00"}, nil, 400, []string{"run_at"}, true},
		{"run_at with space", "orders", obj{"run_at": "2026-11-21 10:30:00Z"}, nil, 400, []string{"run_at"}, true},
		{"delay syntax", "orders", obj{"delay": "5 minutes"}, nil, 400, []string{"delay"}, true},
		{"delay in weeks", "orders", obj{"delay": "1w"}, nil, 400, []string{"delay"}, true},
		{"delay in days too long", "orders", obj{"delay": "1826d"}, nil, 400, []string{"delay"}, false},
		{"delay negative", "orders", obj{"delay": "-1s"}, nil, 400, []string{"delay"}, false},
		{"delay too long", "orders", obj{"delay": "43800h1ms"}, nil, 400, []string{"delay"}, false},
		{"delay a number", "orders", obj{"delay": 60}, nil, 400, []string{"delay"}, true},
		{"run_at and delay", "orders", obj{"run_at": ms(t0), "delay": "1m"}, nil, 400, []string{"run_at"}, true},
		{"payload too large", "orders", with("payload", json.RawMessage(big)), nil, 413, []string{"payload"}, false},
		{"header name", "orders", with("headers", obj{"X Y": "1"}), nil, 400, []string{"headers.X Y"}, false},
		{"header value", "orders", with("headers", obj{"X-Y": "a\nb"}), nil, 400, []string{"headers.X-Y"}, false},
		{"header Kairos-Signature", "orders", with("headers", obj{"Kairos-Signature": "x"}), nil, 400, []string{"headers.Kairos-Signature"}, false},
		{"header webhook-id", "orders", with("headers", obj{"webhook-id": "x"}), nil, 400, []string{"headers.webhook-id"}, false},
		{"header Host", "orders", with("headers", obj{"host": "evil.example"}), nil, 400, []string{"headers.host"}, false},
		{"header Transfer-Encoding", "orders", with("headers", obj{"Transfer-Encoding": "chunked"}), nil, 400, []string{"headers.Transfer-Encoding"}, false},
		{"header Content-Type", "orders", with("headers", obj{"Content-Type": "not a type"}), nil, 400, []string{"headers.Content-Type"}, false},
		{"too many headers", "orders", with("headers", manyHeaders(51)), nil, 400, []string{"headers"}, true},
		{"header value not a string", "orders", with("headers", obj{"X-N": 1}), nil, 400, nil, true},
		{"max_attempts 0", "orders", with("max_attempts", 0), nil, 400, []string{"max_attempts"}, true},
		{"max_attempts 101", "orders", with("max_attempts", 101), nil, 400, []string{"max_attempts"}, true},
		{"max_attempts negative", "orders", with("max_attempts", -1), nil, 400, []string{"max_attempts"}, true},
		{"timeout too short", "orders", with("timeout", "99ms"), nil, 400, []string{"timeout"}, false},
		{"timeout too long", "orders", with("timeout", "16m"), nil, 400, []string{"timeout"}, false},
		{"timeout syntax", "orders", with("timeout", "5"), nil, 400, []string{"timeout"}, true},
		{"backoff initial too short", "orders", with("backoff", obj{"initial": "1ms"}), nil, 400, []string{"backoff.initial"}, false},
		{"backoff max too long", "orders", with("backoff", obj{"max": "8760h"}), nil, 400, []string{"backoff.max"}, false},
		{"backoff max below initial", "orders", with("backoff", obj{"initial": "1m", "max": "30s"}), nil, 400, []string{"backoff.max"}, false},
		{"backoff unknown field", "orders", with("backoff", obj{"factor": 2}), nil, 400, nil, true},
		{"method", "orders", with("method", "CONNECT"), nil, 400, []string{"method"}, true},
		{"unknown field", "orders", with("colour", "red"), nil, 400, []string{"colour"}, true},
		{"several fields", "orders", obj{"id": "", "delay": "x", "max_attempts": 0}, nil, 400, []string{"delay", "id", "max_attempts"}, true},
		{"malformed JSON", "orders", `{"delay": "1m"`, nil, 400, []string{"body"}, true},
		{"trailing data", "orders", `{"delay": "1m"}]`, nil, 400, []string{"body"}, false},
		{"empty body", "orders", "", nil, 400, []string{"body"}, true},
		{"array body", "orders", `[{"delay": "1m"}]`, nil, 400, []string{"body"}, true},
		{"wrong content type", "orders", `{"delay": "1m"}`, []reqOption{contentType("text/plain")}, 415, nil, true},
		{"bad content type", "orders", `{"delay": "1m"}`, []reqOption{contentType("application/")}, 415, nil, true},
		{"body too large", "orders", `{"payload": "` + strings.Repeat("x", DefaultMaxPayload+64<<10) + `"}`, nil, 413, []string{"body"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot(t)
			res := e.do(t, "POST", "/v1/topics/"+tc.path+"/jobs", acme, tc.body, tc.opts...)
			p := e.refused(t, res, before, tc.status, tc.fields, tc.spec)
			if (tc.status == 400 || tc.status == 413) && len(p.Errors) == 0 {
				t.Errorf("%d without field errors: %+v", tc.status, p)
			}
		})
	}
}

// TestJobPayloadLimit shows the payload limit is configurable and exact.
func TestJobPayloadLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{MaxPayload: 100})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	at := json.RawMessage(`"` + strings.Repeat("x", 98) + `"`)
	over := json.RawMessage(`"` + strings.Repeat("x", 99) + `"`)
	e.createJob(t, acme, "orders", obj{"delay": "1m", "payload": at})
	before := e.snapshot(t)
	p := wantProblem(t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"delay": "1m", "payload": over}), http.StatusRequestEntityTooLarge)
	wantFields(t, p, "payload")
	if p.Type != problemBase+"too-large" {
		t.Errorf("type %q", p.Type)
	}
	e.unchanged(t, before)
	// A non-JSON body is measured as sent: the text of the JSON string.
	e.createJob(t, acme, "orders", obj{"delay": "1m", "payload": strings.Repeat("é", 50), "headers": obj{"Content-Type": "text/plain"}})
	before = e.snapshot(t)
	p = wantProblem(t, e.do(t, "POST", "/v1/topics/orders/jobs", acme,
		obj{"delay": "1m", "payload": strings.Repeat("é", 50) + "x", "headers": obj{"Content-Type": "text/plain"}}), http.StatusRequestEntityTooLarge)
	wantFields(t, p, "payload")
	// A body far over the limit is refused before it is decoded.
	p = wantProblem(t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, `{"delay": "1m", "payload": "`+strings.Repeat("x", 100+64<<10)+`"}`), http.StatusRequestEntityTooLarge)
	wantFields(t, p, "body")
	e.unchanged(t, before)
}

func TestRescheduleValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "o1", "delay": "1h"})
	tests := []struct {
		name   string
		id     string
		body   any
		opts   []reqOption
		status int
		fields []string
		spec   bool
	}{
		{"run_at too far past", "o1", obj{"run_at": ms(t0.Add(-25 * time.Hour))}, nil, 400, []string{"run_at"}, false},
		{"run_at too far ahead", "o1", obj{"run_at": ms(t0.Add(maxFuture + time.Second))}, nil, 400, []string{"run_at"}, false},
		{"run_at syntax", "o1", obj{"run_at": "21/11/2026"}, nil, 400, []string{"run_at"}, true},
		{"delay syntax", "o1", obj{"delay": "1 hour"}, nil, 400, []string{"delay"}, true},
		{"delay range", "o1", obj{"delay": "-1h"}, nil, 400, []string{"delay"}, false},
		{"both", "o1", obj{"run_at": ms(t0), "delay": "1m"}, nil, 400, []string{"run_at"}, true},
		{"neither", "o1", obj{}, nil, 400, []string{"run_at"}, true},
		{"unknown field", "o1", obj{"delay": "1m", "payload": 1}, nil, 400, []string{"payload"}, true},
		{"body over 4 KiB", "o1", obj{"delay": "1m" + strings.Repeat(" ", 4<<10)}, nil, 413, []string{"body"}, false},
		{"content type", "o1", `{"delay":"1m"}`, []reqOption{contentType("text/plain")}, 415, nil, true},
		{"bad id", "-o1", obj{"delay": "1m"}, nil, 404, nil, true},
		{"unknown id", "o2", obj{"delay": "1m"}, nil, 404, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot(t)
			res := e.do(t, "PATCH", "/v1/topics/orders/jobs/"+tc.id, acme, tc.body, tc.opts...)
			e.refused(t, res, before, tc.status, tc.fields, tc.spec)
		})
	}
}

// wantCounts checks the state counters of tenant's topic "orders" through
// GET /v1/stats; states left out of counts must be 0.
func wantCounts(tb testing.TB, e *env, tenant string, counts map[kairos.State]int64) {
	tb.Helper()
	full := map[kairos.State]int64{}
	for _, st := range kairos.States {
		full[st] = counts[st]
	}
	stats := want[statsResponse](tb, e.do(tb, "GET", "/v1/stats", e.token(tb, tenant, false), nil), http.StatusOK)
	for _, ts := range stats.Topics {
		if ts.Topic == "orders" {
			if d := cmp.Diff(full, ts.Counts); d != "" {
				tb.Errorf("counts (-want +got):\n%s", d)
			}
			return
		}
	}
	tb.Errorf("no stats for topic orders: %+v", stats)
}

// TestJobActiveConflict shows a job being delivered can be neither
// replaced, rescheduled nor cancelled.
func TestJobActiveConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "o1", "delay": "0s"})
	e.next(t, "acme", "orders", "")
	before := e.snapshot(t)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/topics/orders/jobs", obj{"id": "o1", "delay": "1m"}},
		{"PATCH", "/v1/topics/orders/jobs/o1", obj{"delay": "1m"}},
		{"DELETE", "/v1/topics/orders/jobs/o1", nil},
		{"POST", "/v1/topics/orders/jobs/o1/retry", nil},
	} {
		p := wantProblem(t, e.do(t, c.method, c.path, acme, c.body), http.StatusConflict)
		if p.Type != problemBase+"conflict" {
			t.Errorf("%s %s: type %q", c.method, c.path, p.Type)
		}
	}
	e.unchanged(t, before)
	if got := e.getJob(t, acme, "orders", "o1"); got.State != kairos.StateActive || got.Attempts != 1 {
		t.Errorf("active job: state %s attempts %d", got.State, got.Attempts)
	}
}
