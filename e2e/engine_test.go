package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/verify"
)

func TestFiresOnceAtItsTimeSigned(t *testing.T) { testFiresOnceAtItsTimeSigned(t, startEngine) }

func testFiresOnceAtItsTimeSigned(t *testing.T, start starter) {
	t.Parallel()
	e := start(t, engineOpts{allowPrivate: true})
	rcv := newReceiver(t, nil)
	ctx := context.Background()
	if _, _, err := e.c.PutTopic(ctx, "orders", client.TopicRequest{CallbackURL: rcv.URL + "/hook", CallbackSettings: client.CallbackSettings{
		Headers: map[string]string{"X-Team": "billing"},
	}}); err != nil {
		t.Fatal(err)
	}
	runAt := e.store.Now().Add(1500 * time.Millisecond).Truncate(time.Millisecond)
	created := e.create("orders", client.JobRequest{ID: "order-1", RunAt: runAt, Payload: json.RawMessage(`{"action":"cancel","order":1}`)})
	if created.State != client.StateScheduled || !created.RunAt.Equal(runAt) || created.Result != client.ResultCreated {
		t.Fatalf("created %+v", created)
	}
	got := rcv.waitHits(t, 1, 10*time.Second)[0]
	waitSettled(t, e.store) // no attempt under way: a duplicate would have arrived
	if n := len(rcv.all()); n != 1 {
		t.Fatalf("receiver got %d requests, want 1", n)
	}
	// Same machine, so the receiver's clock is the Redis clock up to the
	// offset measurement error; allow 2ms for it.
	late := got.At.Sub(runAt)
	t.Logf("lateness %v", late)
	if late < -2*time.Millisecond {
		t.Fatalf("fired %v early", -late)
	}
	h := got.Header
	for name, want := range map[string]string{
		"Content-Type": "application/json", "Kairos-Job-Id": "order-1", "Kairos-Topic": "orders",
		"Kairos-Attempt": "1", "Kairos-Scheduled-At": rfc3339ms(runAt), "X-Team": "billing",
	} {
		if h.Get(name) != want {
			t.Errorf("header %s = %q, want %q", name, h.Get(name), want)
		}
	}
	if string(got.Body) != `{"action":"cancel","order":1}` {
		t.Errorf("body = %s", got.Body)
	}
	if got.URL != "/hook" {
		t.Errorf("path = %s", got.URL)
	}
	keys, err := e.c.GetSigningKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify.Callback([]string{keys.Current, keys.Next}, h, got.Body, verify.Options{URL: rcv.URL + "/hook"}); err != nil {
		t.Fatalf("verify.Callback: %v", err)
	}
	// The Standard Webhooks project's own library accepts the signature.
	wh, err := standardwebhooks.NewWebhook(keys.Current)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(got.Body, h); err != nil {
		t.Fatalf("standard-webhooks Verify: %v", err)
	}
	// A tampered body fails.
	if err := verify.Callback([]string{keys.Current}, h, []byte(`{"order":2}`), verify.Options{}); err == nil {
		t.Fatal("Verify accepted a tampered body")
	}
	v := e.waitState("orders", "order-1", "delivered", 5*time.Second)
	if v.Attempts != 1 || len(v.AttemptLog) != 1 || v.AttemptLog[0].Status != 200 {
		t.Fatalf("delivered job %+v", v)
	}
}

func TestCancelBeforeDueNeverFires(t *testing.T) { testCancelBeforeDueNeverFires(t, startEngine) }

func testCancelBeforeDueNeverFires(t *testing.T, start starter) {
	t.Parallel()
	e := start(t, engineOpts{allowPrivate: true})
	rcv := newReceiver(t, nil)
	e.putTopic("t", rcv.URL)
	ctx := context.Background()
	e.create("t", client.JobRequest{ID: "c1", Delay: client.Duration(2 * time.Second)})
	if err := e.c.CancelJob(ctx, "t", "c1"); err != nil {
		t.Fatal(err)
	}
	// A control job due after the cancelled one proves the engine was firing.
	e.create("t", client.JobRequest{ID: "control", Delay: client.Duration(2500 * time.Millisecond)})
	rcv.waitHits(t, 1, 10*time.Second)
	waitSettled(t, e.store)
	jobs := rcv.byJob()
	if len(jobs["c1"]) != 0 || len(jobs["control"]) != 1 {
		t.Fatalf("hits by job: c1=%d control=%d; want 0 and 1", len(jobs["c1"]), len(jobs["control"]))
	}
	if j, err := e.c.GetJob(ctx, "t", "c1"); err != nil || j.State != client.StateCancelled || j.Attempts != 0 {
		t.Fatalf("GET cancelled job: %+v, %v; want it cancelled, never attempted", j, err)
	}
}

func TestRescheduleEarlierAndLater(t *testing.T) { testRescheduleEarlierAndLater(t, startEngine) }

func testRescheduleEarlierAndLater(t *testing.T, start starter) {
	t.Parallel()
	e := start(t, engineOpts{allowPrivate: true})
	rcv := newReceiver(t, nil)
	e.putTopic("t", rcv.URL)
	now := e.store.Now()
	e.create("t", client.JobRequest{ID: "earlier", Delay: client.Duration(time.Hour)})
	e.create("t", client.JobRequest{ID: "later", Delay: client.Duration(2 * time.Second)})
	earlierAt := now.Add(1200 * time.Millisecond).Truncate(time.Millisecond)
	laterAt := now.Add(4 * time.Second).Truncate(time.Millisecond)
	ctx := context.Background()
	v, err := e.c.RescheduleJob(ctx, "t", "earlier", client.RescheduleRequest{RunAt: earlierAt})
	if err != nil || !v.NextRunAt.Equal(earlierAt) || v.State != client.StateScheduled {
		t.Fatalf("rescheduled %+v, %v", v, err)
	}
	if _, err := e.c.RescheduleJob(ctx, "t", "later", client.RescheduleRequest{RunAt: laterAt}); err != nil {
		t.Fatal(err)
	}
	rcv.waitHits(t, 2, 10*time.Second)
	waitSettled(t, e.store)
	jobs := rcv.byJob()
	for id, at := range map[string]time.Time{"earlier": earlierAt, "later": laterAt} {
		hs := jobs[id]
		if len(hs) != 1 {
			t.Fatalf("job %s fired %d times, want once", id, len(hs))
		}
		late := hs[0].At.Sub(at)
		t.Logf("%s: lateness %v", id, late)
		if late < -2*time.Millisecond {
			t.Errorf("job %s fired %v before its new time", id, -late)
		}
		if hs[0].Header.Get("Kairos-Scheduled-At") != rfc3339ms(at) {
			t.Errorf("job %s Kairos-Scheduled-At = %s, want %s", id, hs[0].Header.Get("Kairos-Scheduled-At"), rfc3339ms(at))
		}
	}
}

func TestUpsertByIDDeliversOnce(t *testing.T) { testUpsertByIDDeliversOnce(t, startEngine) }

func testUpsertByIDDeliversOnce(t *testing.T, start starter) {
	t.Parallel()
	e := start(t, engineOpts{allowPrivate: true})
	rcv := newReceiver(t, nil)
	e.putTopic("t", rcv.URL)
	e.create("t", client.JobRequest{ID: "u", Delay: client.Duration(600 * time.Millisecond), Payload: json.RawMessage(`"v1"`)})
	if j := e.create("t", client.JobRequest{ID: "u", Delay: client.Duration(time.Second), Payload: json.RawMessage(`"v2"`)}); j.Result != client.ResultReplaced {
		t.Fatalf("second create of u: %s, want replaced", j.Result)
	}
	rcv.waitHits(t, 1, 10*time.Second)
	waitSettled(t, e.store)
	hs := rcv.all()
	if len(hs) != 1 || string(hs[0].Body) != `"v2"` {
		t.Fatalf("got %d deliveries, first body %q; want one with \"v2\"", len(hs), hs[0].Body)
	}
}

func TestFailTwiceThenSucceed(t *testing.T) { testFailTwiceThenSucceed(t, startEngine) }

func testFailTwiceThenSucceed(t *testing.T, start starter) {
	t.Parallel()
	e := start(t, engineOpts{allowPrivate: true})
	rcv := newReceiver(t, func(n int, _ hit) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	initial, maxB := 300*time.Millisecond, 2*time.Second
	e.putTopicWith("t", client.TopicRequest{CallbackURL: rcv.URL, CallbackSettings: client.CallbackSettings{
		Backoff: &client.Backoff{Initial: client.Duration(initial), Max: client.Duration(maxB)},
	}})
	e.create("t", client.JobRequest{ID: "flaky"})
	hs := rcv.waitHits(t, 3, 15*time.Second)
	v := e.waitState("t", "flaky", "delivered", 5*time.Second)
	if v.Attempts != 3 || len(v.AttemptLog) != 3 || v.AttemptLog[0].Status != 500 || v.AttemptLog[2].Status != 204 {
		t.Fatalf("job %+v", v)
	}
	if !strings.Contains(v.AttemptLog[0].Response, "Internal Server Error") {
		t.Errorf("attempt 1 response snippet = %q", v.AttemptLog[0].Response)
	}
	id := hs[0].Header.Get("webhook-id")
	for i, h := range hs {
		if h.Header.Get("webhook-id") != id {
			t.Errorf("attempt %d webhook-id %q, want %q (stable across retries)", i+1, h.Header.Get("webhook-id"), id)
		}
		if got := h.Header.Get("Kairos-Attempt"); got != strconv.Itoa(i+1) {
			t.Errorf("attempt %d Kairos-Attempt = %s", i+1, got)
		}
	}
	// Full jitter: gap n lies in [0, min(max, initial*2^(n-1))], plus the
	// time to claim, pop and dial (generous, for a shared machine).
	const slack = time.Second
	for n := 1; n <= 2; n++ {
		gap := hs[n].At.Sub(hs[n-1].At)
		window := min(maxB, initial<<(n-1))
		t.Logf("gap %d: %v (window %v)", n, gap, window)
		if gap < 0 || gap > window+slack {
			t.Errorf("gap %d = %v, want within [0, %v]", n, gap, window+slack)
		}
	}
}

func TestRetryAfterHonoured(t *testing.T) { testRetryAfterHonoured(t, startEngine) }

func testRetryAfterHonoured(t *testing.T, start starter) {
	t.Parallel()
	e := start(t, engineOpts{allowPrivate: true})
	rcv := newReceiver(t, func(n int, _ hit) int {
		if n == 1 {
			return http.StatusTooManyRequests // with Retry-After: 1
		}
		return http.StatusOK
	})
	e.putTopicWith("t", client.TopicRequest{CallbackURL: rcv.URL, CallbackSettings: client.CallbackSettings{
		Backoff: &client.Backoff{Initial: client.Duration(10 * time.Millisecond), Max: client.Duration(20 * time.Millisecond)},
	}})
	e.create("t", client.JobRequest{ID: "limited"})
	hs := rcv.waitHits(t, 2, 10*time.Second)
	if gap := hs[1].At.Sub(hs[0].At); gap < time.Second-2*time.Millisecond {
		t.Fatalf("retried %v after a 429 with Retry-After: 1; want at least 1s (backoff alone is 20ms)", gap)
	}
}

func TestDeadAfterMaxAttemptsThenReplay(t *testing.T) {
	testDeadAfterMaxAttemptsThenReplay(t, startEngine)
}

func testDeadAfterMaxAttemptsThenReplay(t *testing.T, start starter) {
	t.Parallel()
	e := start(t, engineOpts{allowPrivate: true})
	healthy := make(chan struct{})
	rcv := newReceiver(t, func(int, hit) int {
		select {
		case <-healthy:
			return http.StatusOK
		default:
			return http.StatusBadGateway
		}
	})
	e.putTopicWith("t", client.TopicRequest{
		CallbackURL: rcv.URL,
		CallbackSettings: client.CallbackSettings{
			MaxAttempts: 3,
			Backoff:     &client.Backoff{Initial: client.Duration(50 * time.Millisecond), Max: client.Duration(100 * time.Millisecond)},
		},
	})
	e.create("t", client.JobRequest{ID: "doomed", Payload: json.RawMessage(`{"n":1}`)})
	v := e.waitState("t", "doomed", "dead", 15*time.Second)
	if v.Attempts != 3 || len(rcv.all()) != 3 {
		t.Fatalf("dead after %d attempts and %d requests; want 3 and 3", v.Attempts, len(rcv.all()))
	}
	last := v.AttemptLog[len(v.AttemptLog)-1]
	if last.Status != 502 || !strings.Contains(last.Error, "502") || !strings.Contains(last.Response, "Bad Gateway") {
		t.Fatalf("last attempt %+v", last)
	}
	ctx := context.Background()
	page, err := e.c.ListJobs(ctx, "t", client.ListOptions{State: client.StateDead})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != "doomed" {
		t.Fatalf("dead letters %+v, %v", page, err)
	}
	// Dead letters across topics: another topic's dead job is listed too.
	gone := newReceiver(t, func(int, hit) int { return http.StatusGone })
	e.putTopicWith("u", client.TopicRequest{CallbackURL: gone.URL, CallbackSettings: client.CallbackSettings{MaxAttempts: 1}})
	e.create("u", client.JobRequest{ID: "gone"})
	e.waitState("u", "gone", "dead", 15*time.Second)
	deadKeys := func() []string {
		var out []string
		for j, err := range e.c.AllDead(ctx, client.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, j.Topic+"/"+j.ID+" "+string(j.State))
		}
		return out
	}
	if got := deadKeys(); !slices.Equal(got, []string{"u/gone dead", "t/doomed dead"}) {
		t.Fatalf("GET /v1/dead lists %v; want u/gone, then t/doomed", got)
	}
	close(healthy)
	if _, err := e.c.RetryJob(ctx, "t", "doomed"); err != nil {
		t.Fatal(err)
	}
	v = e.waitState("t", "doomed", "delivered", 10*time.Second)
	if len(rcv.all()) != 4 || string(rcv.all()[3].Body) != `{"n":1}` {
		t.Fatalf("after replay: %d requests", len(rcv.all()))
	}
	if got := deadKeys(); !slices.Equal(got, []string{"u/gone dead"}) {
		t.Fatalf("after the replay GET /v1/dead lists %v; want u/gone only", got)
	}
	t.Logf("replayed job: %+v", v)
}

func TestPrivateTargetsRefusedByDefault(t *testing.T) {
	testPrivateTargetsRefusedByDefault(t, startEngine)
}

// testPrivateTargetsRefusedByDefault: the API refuses literal private
// addresses and localhost when they are registered, and the worker refuses
// private targets when it dials them (jobs stored by a process that allowed
// them, or names that resolve to private addresses), as a failed attempt
// to retry, whose error names the setting that allows them.
func testPrivateTargetsRefusedByDefault(t *testing.T, start starter) {
	t.Parallel()
	e := start(t, engineOpts{allowPrivate: false})
	rcv := newReceiver(t, nil)
	localhost := strings.Replace(rcv.URL, "127.0.0.1", "localhost", 1)
	metadata := "http://169.254.169.254/latest/meta-data/"
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"put topic": func() error {
			_, _, err := e.c.PutTopic(ctx, "t", client.TopicRequest{CallbackURL: rcv.URL})
			return err
		},
		"create, localhost": func() error { _, err := e.c.CreateJob(ctx, "t", client.JobRequest{CallbackURL: localhost}); return err },
		"create, metadata":  func() error { _, err := e.c.CreateJob(ctx, "t", client.JobRequest{CallbackURL: metadata}); return err },
		"batch": func() error {
			// every item failed: a batch-failed problem, with the item's error in the results
			res, err := e.c.CreateJobs(ctx, "t", []client.JobRequest{{CallbackURL: rcv.URL}})
			if err == nil || res == nil || res.Failed != 1 {
				return nil
			}
			return res.Results[0].Error
		},
	} {
		var p *client.Error
		if !errors.As(call(), &p) || len(p.Errors) != 1 || !strings.HasSuffix(p.Errors[0].Field, "callback_url") ||
			!strings.Contains(p.Errors[0].Message, "KAIROS_ALLOW_PRIVATE_URLS=1") || !strings.Contains(p.Errors[0].Message, "--allow-private-urls") {
			t.Errorf("%s: %+v; want the callback_url refused, naming the setting", name, p)
		}
	}
	if topics, err := e.c.ListTopics(ctx); err != nil || len(topics) != 0 {
		t.Fatalf("refused requests registered topics: %+v, %v", topics, err)
	}

	if err := e.store.EnsureTopic(ctx, "acme", "t"); err != nil {
		t.Fatal(err)
	}
	for id, url := range map[string]string{"loop": rcv.URL, "byname": localhost, "metadata": metadata} {
		j := kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: id}, CallbackURL: url, RunAt: e.store.Now()}
		if _, err := e.store.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	// a target refused when dialled is a failed attempt, retried with
	// backoff like a connection error: a process that allows it delivers
	// the job later
	for _, id := range []string{"loop", "byname", "metadata"} {
		v := e.waitState("t", id, "retrying", 10*time.Second)
		if v.Attempts < 1 || len(v.AttemptLog) == 0 {
			t.Fatalf("%s: %d attempts, log %+v; want a failed attempt, to be retried", id, v.Attempts, v.AttemptLog)
		}
		if msg := v.AttemptLog[0].Error; !strings.Contains(msg, "refused") || !strings.Contains(msg, "KAIROS_ALLOW_PRIVATE_URLS") {
			t.Errorf("%s: recorded error %q does not say why or how to allow it", id, msg)
		}
	}
	if n := len(rcv.all()); n != 0 {
		t.Fatalf("a private target received %d requests", n)
	}
}

// TestSkewedClockNeverFiresEarly runs the engine on a machine whose idea
// of Redis's clock is 300ms fast (a clock sync taken while Redis was busy
// once made it 44ms fast). What is due is decided by Redis's TIME inside
// the claim script, so the skew may cost a wake-up, never an early fire.
func TestSkewedClockNeverFiresEarly(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true, clockSkew: 300 * time.Millisecond})
	rcv := newReceiver(t, nil)
	e.putTopic("t", rcv.URL)
	real := time.Now()
	due := map[string]time.Time{}
	for i := range 20 {
		at := real.Add(time.Second + time.Duration(i)*50*time.Millisecond).Truncate(time.Millisecond)
		id := "s" + strconv.Itoa(i)
		due[id] = at
		e.create("t", client.JobRequest{ID: id, RunAt: at})
	}
	rcv.waitHits(t, len(due), 15*time.Second)
	worst := time.Hour
	for id, hs := range rcv.byJob() {
		late := hs[0].At.Sub(due[id])
		worst = min(worst, late)
		if late < -2*time.Millisecond {
			t.Errorf("job %s fired %v early with a clock 300ms fast", id, -late)
		}
	}
	t.Logf("earliest arrival relative to due: %v", worst)
}
