package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
	"github.com/kairos-sh/kairos/verify"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// A topic limited to 200 deliveries a second, fed by three kairos
// processes with 6,000 jobs due at one instant: every job is delivered
// once, none early, and at most 200 in any second, counted both by the
// attempts' start times (from the jobs' attempt logs, on the Redis clock)
// and by the receiver's arrivals. The calendar spaces the 200 over a
// second and rdb.RateGuard (5.1 ms apart: 196 a second), so a delivery
// that starts up to kairos.PacedLate after its time, and arrives a few ms
// after it starts, still keeps the receiver's count; without the guard
// the receiver saw 201-202. Without the limit the 6,000 arrive within a
// few seconds. On a loaded machine the way to the receiver can vary by more
// than the guard's spacing; the receiver's count is then held to what the
// starts allow given that variation.
func TestRateLimitAcrossThreeProcesses(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	rcv := newReceiver(t, nil)
	const limit, n = 200, 6000
	jobs, due := flowLoad(t, store, prefix, kairos.Topic{Tenant: "acme", Name: "partner", CallbackURL: rcv.URL,
		RateLimit: limit, RatePeriod: time.Second}, n)
	rcv.waitHits(t, n, 90*time.Second)
	waitSettled(t, store) // any duplicate has come
	var arrived []time.Time
	for _, h := range rcv.all() {
		arrived = append(arrived, h.At)
	}
	var started []time.Time
	var minTransit, maxTransit time.Duration // arrival less the attempt's start
	byJob := rcv.byJob()
	for i, jb := range jobs {
		got := byJob[jb.ID]
		if len(got) != 1 {
			t.Errorf("job %s delivered %d times", jb.ID, len(got))
		} else if got[0].At.Before(store.Local(due)) {
			t.Errorf("job %s delivered %v early", jb.ID, store.Local(due).Sub(got[0].At))
		}
		j, err := store.GetJob(context.Background(), jb.JobKey)
		if err != nil || len(j.Log) != 1 {
			t.Fatalf("job %s: %d attempts logged, %v", jb.ID, len(j.Log), err)
		}
		started = append(started, j.Log[0].At)
		if len(got) == 1 {
			d := got[0].At.Sub(store.Local(j.Log[0].At))
			if i == 0 || d < minTransit {
				minTransit = d
			}
			maxTransit = max(maxTransit, d)
		}
	}
	most, span := busiestSecond(started)
	rmost, rspan := busiestSecond(arrived)
	// Arrivals in a second started within that second widened by how much
	// the way to the receiver varied: on a loaded machine (this test with
	// -count or beside the others) that can pass the guard's spacing.
	jitter := maxTransit - minTransit
	bound := busiest(started, time.Second+jitter+time.Millisecond) // starts are logged to the ms
	t.Logf("%d attempts started over %v: %.1f/s, at most %d in any 1 s window (limit %d); the receiver saw them over %v (%.1f/s), at most %d in one "+
		"(transit varied by %v: at most %d could arrive in one)",
		len(started), span.Round(time.Millisecond), float64(len(started)-1)/span.Seconds(), most, limit,
		rspan.Round(time.Millisecond), float64(len(arrived)-1)/rspan.Seconds(), rmost, jitter.Round(time.Millisecond), bound)
	if most > limit {
		t.Errorf("%d attempts started in one second, limit %d", most, limit)
	}
	if rmost > max(limit, bound) {
		t.Errorf("the receiver saw %d callbacks in one second, limit %d (%d with the transit's variation)", rmost, limit, bound)
	}
}

// busiestSecond returns the most times in any 1-second window, and the span
// of them all.
func busiestSecond(ts []time.Time) (int, time.Duration) {
	return busiest(ts, time.Second), ts[len(ts)-1].Sub(ts[0])
}

// busiest returns the most times in any window of width w; it sorts ts.
func busiest(ts []time.Time, w time.Duration) int {
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	most, j := 0, 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= w {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// Parallelism 5 across three processes, a receiver that holds each
// request 200 ms: it never has more than 5 at once, and gets every job once.
func TestParallelismAcrossThreeProcesses(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	var inFlight, most atomic.Int64
	rcv := newReceiver(t, func(int, hit) int {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(200 * time.Millisecond) // the point: the request held, its slot busy
		inFlight.Add(-1)
		return 200
	})
	const par, n = 5, 75
	flowLoad(t, store, prefix, kairos.Topic{Tenant: "acme", Name: "lambda", CallbackURL: rcv.URL, Parallelism: par}, n)
	hs := rcv.waitHits(t, n, 60*time.Second)
	waitSettled(t, store) // any duplicate has come
	first, last := hs[0].At, hs[0].At
	for _, h := range rcv.all() {
		first, last = minTime(first, h.At), maxTime(last, h.At)
	}
	t.Logf("%d jobs in %v: %.1f/s (parallelism %d x 200 ms: at most %d/s); at most %d at once",
		n, last.Sub(first).Round(time.Millisecond), float64(n-1)/last.Sub(first).Seconds(), par, par*5, most.Load())
	if most.Load() > par {
		t.Errorf("%d callbacks at once, parallelism %d", most.Load(), par)
	}
	for id, got := range rcv.byJob() {
		if len(got) != 1 {
			t.Errorf("job %s delivered %d times", id, len(got))
		}
	}
	if len(rcv.byJob()) != n {
		t.Errorf("%d jobs delivered, want %d", len(rcv.byJob()), n)
	}
}

// flowLoad registers topic tp, starts three kairos processes, and creates
// n jobs of tp all due at one instant, a second ahead.
func flowLoad(t *testing.T, store *rdb.Store, prefix string, tp kairos.Topic, n int) ([]kairos.Job, time.Time) {
	t.Helper()
	if _, _, err := store.PutTopic(context.Background(), tp); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"A", "B", "C"} {
		startKairos(t, name, prefix).WaitLog(t, "scanner started", 15*time.Second)
	}
	due := store.Now().Add(time.Second)
	jobs := make([]kairos.Job, n)
	for i := range jobs {
		jobs[i] = kairos.Job{JobKey: kairos.JobKey{Tenant: tp.Tenant, Topic: tp.Name, ID: "f" + strconv.Itoa(i)}, RunAt: due}
	}
	for _, r := range store.EnqueueBatch(context.Background(), jobs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	return jobs, due
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// A receiver down for 20 s, then up, behind a topic with a circuit
// breaker (3 failures in a row, 1 s cool-down) and 3 attempts a job with
// 100 ms retries: the failed attempts during the outage stay within those
// started before it opened (the topic's concurrency, and one a slot that
// each of the first two failures frees: a topic with a breaker frees a
// slot once the breaker knows the answer) and one probe a cool-down (1, 2,
// 4, 8 s); the topic answer says open; no job dies; all are delivered
// after it. Without the breaker every job would die within a second.
func TestBreakerHoldsJobsThroughAnOutage(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	ctx := context.Background()
	var up atomic.Bool
	var failed atomic.Int64
	rcv := newReceiver(t, func(int, hit) int {
		if up.Load() {
			return 200
		}
		failed.Add(1)
		return 503
	})
	e.putTopicWith("partner", client.TopicRequest{
		CallbackURL: rcv.URL,
		Breaker:     &client.BreakerRequest{Failures: 3, Cooldown: client.Duration(time.Second)},
		CallbackSettings: client.CallbackSettings{
			MaxAttempts: 3,
			Backoff:     &client.Backoff{Initial: client.Duration(100 * time.Millisecond), Max: client.Duration(200 * time.Millisecond)},
		},
	})
	const n, concurrency, outage = 20, 10, 20 * time.Second
	const probes = 4 // at 1, 3, 7 and 15 s after it opened; the next at 31 s
	var jobs []client.JobRequest
	for i := range n {
		jobs = append(jobs, client.JobRequest{ID: "b" + strconv.Itoa(i), Delay: client.Duration(300 * time.Millisecond)})
	}
	e.createBatch("partner", jobs)
	start := time.Now()
	sawOpen := false
	for time.Since(start) < outage {
		tp, err := e.c.GetTopic(ctx, "partner")
		if err != nil {
			t.Fatal(err)
		}
		if tp.Breaker != nil && tp.Breaker.State == "open" {
			sawOpen = true
		}
		time.Sleep(100 * time.Millisecond) // the point: the outage lasts; the breaker looked at now and then
	}
	up.Store(true)
	during := failed.Load()
	for i := range n {
		id := "b" + strconv.Itoa(i)
		testwait.UntilNil(t, 30*time.Second, func() error {
			switch j := e.job("partner", id); j.State {
			case client.StateDelivered:
				return nil
			case client.StateDead:
				t.Fatalf("job %s died of the outage: %+v", j.ID, j.LastAttempt)
			default:
				return fmt.Errorf("it is %s", j.State)
			}
			return nil
		}, "job "+id+" delivered after the receiver came back")
	}
	t.Logf("%d failed attempts during the %v outage (up to %d started before it opened, one probe a cool-down of 1, 2, 4, 8 s); breaker seen open: %v",
		during, outage, concurrency+2, sawOpen)
	if !sawOpen {
		t.Error("the topic answer never showed the breaker open")
	}
	if want := concurrency + 2 + probes; during > int64(want) {
		t.Errorf("%d failed attempts during the outage, want at most %d", during, want)
	}
}

// A job that goes dead sends one signed failure notification to its
// topic's failure_url, without the topic's headers; a delivered job sends
// none; ids of the notification's form are refused at create.
func TestFailureNotification(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	ctx := context.Background()
	rcv := newReceiver(t, func(_ int, h hit) int {
		if h.Header.Get("Kairos-Job-Id") == "fails" {
			return 500
		}
		return 200
	})
	failed := newReceiver(t, nil)
	e.putTopicWith("orders", client.TopicRequest{
		CallbackURL: rcv.URL,
		FailureURL:  failed.URL,
		CallbackSettings: client.CallbackSettings{
			MaxAttempts: 2,
			Headers:     map[string]string{"X-Partner-Key": "k-secret"},
			Backoff:     &client.Backoff{Initial: client.Duration(100 * time.Millisecond), Max: client.Duration(100 * time.Millisecond)},
		},
	})
	e.create("orders", client.JobRequest{ID: "fails", Payload: json.RawMessage(`{"n":1}`)})
	e.create("orders", client.JobRequest{ID: "works", Payload: json.RawMessage(`{"n":2}`)})
	hs := failed.waitHits(t, 1, 20*time.Second)
	waitSettled(t, e.store) // a second one would have come
	if hs = failed.all(); len(hs) != 1 {
		t.Fatalf("%d failure notifications, want 1", len(hs))
	}
	h := hs[0]
	keys, err := e.c.GetSigningKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify.Callback([]string{keys.Current, keys.Next}, h.Header, h.Body, verify.Options{}); err != nil {
		t.Errorf("signature: %v", err)
	}
	// and the Standard Webhooks project's own library accepts it
	wh, err := standardwebhooks.NewWebhook(keys.Current)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(h.Body, h.Header); err != nil {
		t.Errorf("standard-webhooks Verify of the notification: %v", err)
	}
	if got := h.Header.Get("Kairos-Job-Id"); got != kairos.NoticeID("fails", 2) {
		t.Errorf("notification job id %q", got)
	}
	if h.Header.Get("X-Partner-Key") != "" {
		t.Error("the topic's header went to the failure URL")
	}
	var body struct {
		Type        string
		JobID       string `json:"job_id"`
		Topic       string
		Attempts    int
		LastAttempt struct{ Status int } `json:"last_attempt"`
	}
	if err := json.Unmarshal(h.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != "job.dead" || body.JobID != "fails" || body.Topic != "orders" || body.Attempts != 2 || body.LastAttempt.Status != 500 {
		t.Errorf("notification body %s", h.Body)
	}
	if j := e.job("orders", "fails"); j.State != client.StateDead {
		t.Errorf("the failing job is %s", j.State)
	}
	if _, err := e.c.CreateJob(ctx, "orders", client.JobRequest{ID: "x~dead.1"}); client.StatusCode(err) != 400 {
		t.Errorf("create with a notification's id: %v, want 400", err)
	}
}

// Jobs of two topics that name one flow_key share its pace: 80 jobs of
// two topics limited to 20/s each, all with flow_key "partner", start at
// most 20 in any second; a job's own failure_url is told of its death.
func TestJobFlowKeyAndFailureURL(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	rcv := newReceiver(t, func(_ int, h hit) int {
		if h.Header.Get("Kairos-Job-Id") == "doomed" {
			return 500
		}
		return 200
	})
	own := newReceiver(t, nil)
	for _, topic := range []string{"a", "b"} {
		e.putTopicWith(topic, client.TopicRequest{CallbackURL: rcv.URL, Rate: &client.Rate{Limit: 20, Period: client.Duration(time.Second)}, CallbackSettings: client.CallbackSettings{
			MaxAttempts: 1,
		}})
	}
	e.create("a", client.JobRequest{ID: "doomed", FailureURL: own.URL})
	var jobs []client.JobRequest
	for i := range 40 {
		jobs = append(jobs, client.JobRequest{ID: "s" + strconv.Itoa(i), FlowKey: "partner", Delay: client.Duration(200 * time.Millisecond)})
	}
	e.createBatch("a", jobs)
	e.createBatch("b", jobs)
	rcv.waitHits(t, 81, 30*time.Second)
	var started []time.Time
	for _, topic := range []string{"a", "b"} {
		for i := range 40 {
			j := e.waitState(topic, "s"+strconv.Itoa(i), client.StateDelivered, 10*time.Second)
			if j.FlowKey != "partner" || j.LastAttempt == nil {
				t.Fatalf("job %s/%s: flow key %q, last attempt %+v", topic, j.ID, j.FlowKey, j.LastAttempt)
			}
			started = append(started, j.LastAttempt.At.Time)
		}
	}
	most, span := busiestSecond(started)
	t.Logf("80 jobs of two topics sharing flow key partner: %v, at most %d started in any second (20/s)", span.Round(time.Millisecond), most)
	if most > 20 {
		t.Errorf("%d started in one second: the flow key's pace is 20/s", most)
	}
	hs := own.waitHits(t, 1, 10*time.Second)
	if got := hs[0].Header.Get("Kairos-Job-Id"); got != kairos.NoticeID("doomed", 1) {
		t.Errorf("the job's own failure URL got %q", got)
	}
}
