package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testproc"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
	"github.com/kairos-sh/kairos/verify"
)

// instantOf is the instant of an occurrence from its job id, <schedule>@<unix ms>.
func instantOf(t *testing.T, jobID string) time.Time {
	t.Helper()
	_, at, ok := kairos.ParseOccurrence(jobID)
	if !ok {
		t.Fatalf("job id %q is not an occurrence's", jobID)
	}
	return at
}

func TestScheduleEverySecond(t *testing.T) { testScheduleEverySecond(t, startEngine) }

// A schedule every second fires 5 times in 5 s, each at its instant (never
// early), as distinct signed jobs carrying Kairos-Schedule-Id; a retried
// occurrence keeps its webhook-id, and the schedule does not wait for it.
// Then pause stops it, resume goes on from the next future instant
// without replaying the paused ones, and delete ends it.
func testScheduleEverySecond(t *testing.T, start starter) {
	t.Parallel()
	e := start(t, engineOpts{allowPrivate: true})
	ctx := context.Background()
	// at least half a second ahead: the PUT must land before it (a full
	// second truncated could be a few ms ahead, and a loaded machine missed it)
	first := e.store.Now().Add(1500 * time.Millisecond).Truncate(time.Second)
	failID := kairos.OccurrenceID("tick", first.Add(time.Second))
	rcv := newReceiver(t, func(n int, h hit) int {
		// The second occurrence's first attempt fails: it is retried
		// while the next occurrences fire on time.
		if h.Header.Get("Kairos-Job-Id") == failID && h.Header.Get("Kairos-Attempt") == "1" {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	e.putTopicWith("ticks", client.TopicRequest{CallbackURL: rcv.URL, CallbackSettings: client.CallbackSettings{
		Backoff: &client.Backoff{Initial: client.Duration(300 * time.Millisecond), Max: client.Duration(300 * time.Millisecond)},
	}})
	sc, err := e.c.PutSchedule(ctx, "ticks", "tick", client.ScheduleRequest{Every: client.Duration(time.Second), StartAt: first,
		Payload: json.RawMessage(`{"tick":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.NextRuns) != 5 || !sc.NextRuns[0].Equal(first) || !sc.NextRuns[4].Equal(first.Add(4*time.Second)) {
		t.Fatalf("next runs %v, want every second from %v", sc.NextRuns, first)
	}

	// 5 occurrences, and the retry of the second: 6 requests.
	hs := rcv.waitHits(t, 6, 15*time.Second)
	keys, err := e.c.GetSigningKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byInstant := map[time.Time][]hit{}
	for _, h := range hs {
		if sid := h.Header.Get("Kairos-Schedule-Id"); sid != "tick" {
			t.Errorf("Kairos-Schedule-Id %q", sid)
		}
		if err := verify.Callback([]string{keys.Current, keys.Next}, h.Header, h.Body, verify.Options{}); err != nil {
			t.Errorf("signature: %v", err)
		}
		if string(h.Body) != `{"tick":true}` {
			t.Errorf("body %s", h.Body)
		}
		at := instantOf(t, h.Header.Get("Kairos-Job-Id"))
		byInstant[at] = append(byInstant[at], h)
	}
	ids := map[string]time.Time{}
	for i := range 5 {
		at := first.Add(time.Duration(i) * time.Second)
		got := byInstant[at]
		if len(got) == 0 {
			t.Fatalf("occurrence %d (%v) never fired; fired: %v", i, at, slices.Collect(func(yield func(time.Time) bool) {
				for k := range byInstant {
					yield(k)
				}
			}))
		}
		late := got[0].At.Sub(at)
		t.Logf("occurrence %d %s: lateness %v, %d request(s)", i, got[0].Header.Get("Kairos-Job-Id"), late, len(got))
		if late < -2*time.Millisecond {
			t.Errorf("occurrence %d fired %v early", i, -late)
		}
		wid := got[0].Header.Get("webhook-id")
		if prev, dup := ids[wid]; dup {
			t.Errorf("occurrences %v and %v share webhook-id %s", prev, at, wid)
		}
		ids[wid] = at
		want := 1
		if i == 1 {
			want = 2 // the failed attempt and its retry
		}
		if len(got) != want {
			t.Errorf("occurrence %d: %d requests, want %d", i, len(got), want)
		}
		if len(got) == 2 && (got[1].Header.Get("webhook-id") != wid || got[1].Header.Get("Kairos-Attempt") != "2") {
			t.Errorf("retry of occurrence %d: webhook-id %s attempt %s, want %s and 2", i, got[1].Header.Get("webhook-id"),
				got[1].Header.Get("Kairos-Attempt"), wid)
		}
	}
	// The retried occurrence is a job like any, delivered on its second attempt.
	j := e.waitState("ticks", failID, client.StateDelivered, 5*time.Second)
	if j.Attempts != 2 || len(j.AttemptLog) != 2 || j.AttemptLog[0].Status != http.StatusServiceUnavailable {
		t.Errorf("retried occurrence: %+v", j)
	}

	// Pause: nothing fires (an occurrence already claimed by then may
	// still: the scanner claims up to a slot ahead).
	if _, err := e.c.PauseSchedule(ctx, "ticks", "tick"); err != nil {
		t.Fatal(err)
	}
	pausedAt := e.store.Now()
	time.Sleep(2500 * time.Millisecond) // the point: paused a while, nothing may fire
	resumedAt := e.store.Now()
	sc, err = e.c.ResumeSchedule(ctx, "ticks", "tick")
	if err != nil {
		t.Fatal(err)
	}
	if !sc.NextRuns[0].After(resumedAt) {
		t.Errorf("resumed with next run %v, not after %v", sc.NextRuns[0], resumedAt)
	}
	n := len(rcv.all())
	rcv.waitHits(t, n+2, 10*time.Second)
	if err := e.c.DeleteSchedule(ctx, "ticks", "tick"); err != nil {
		t.Fatal(err)
	}
	deletedAt := e.store.Now()
	waitSettled(t, e.store) // nothing due: what was claimed before the delete has come
	for _, h := range rcv.all() {
		at := instantOf(t, h.Header.Get("Kairos-Job-Id"))
		if at.After(pausedAt.Add(500*time.Millisecond)) && at.Before(resumedAt) {
			t.Errorf("occurrence of %v fired while paused (%v to %v)", at, pausedAt, resumedAt)
		}
		if at.After(deletedAt.Add(500 * time.Millisecond)) {
			t.Errorf("occurrence of %v fired after the delete at %v", at, deletedAt)
		}
	}
	if _, err := e.c.GetSchedule(ctx, "ticks", "tick"); !client.IsNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}
}

// Two kairos processes share the Redis: every occurrence fires once per
// attempt. The process delivering an occurrence is killed mid-delivery:
// the other delivers it again (same webhook-id, attempt 2) and the schedule
// goes on from the process that is left, with no instant skipped.
func TestScheduleSurvivesKillOfTheDeliveringProcess(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	var hangID atomic.Value
	hangID.Store("")
	hung := make(chan struct{}, 1)
	rcv := newReceiver(t, func(n int, h hit) int {
		if h.Header.Get("Kairos-Job-Id") == hangID.Load() && h.Header.Get("Kairos-Attempt") == "1" {
			hung <- struct{}{}
			time.Sleep(4 * time.Second) // its process is killed meanwhile
		}
		return http.StatusOK
	})
	putTopic(t, store, "t", rcv.URL, 2*time.Second)
	procs := []*testproc.Proc{startKairos(t, "A", prefix), startKairos(t, "B", prefix)}
	for _, p := range procs {
		p.WaitLog(t, "scanner started", 15*time.Second)
	}
	first := store.Now().Add(time.Second).Truncate(time.Second)
	hang := first.Add(3 * time.Second)
	hangID.Store(kairos.OccurrenceID("beat", hang))
	if _, err := store.PutSchedule(context.Background(), kairos.Schedule{Tenant: "acme", Topic: "t", ID: "beat", Every: time.Second,
		StartAt: first, CreatedAt: store.Now(), Job: kairos.Job{Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hung:
	case <-time.After(20 * time.Second):
		t.Fatal("the occurrence to hang never arrived")
	}
	// The process with the callback in flight is the one delivering it.
	killed := busyProcess(t, procs)
	killed.Signal(syscall.SIGKILL)
	killedAt := store.Now()
	t.Logf("killed %s delivering %s", killed.Name, hangID.Load())

	// The hung occurrence is delivered again, and 5 more after the kill.
	testwait.UntilNil(t, 30*time.Second, func() error {
		after, again := 0, 0
		for _, h := range rcv.all() {
			id := h.Header.Get("Kairos-Job-Id")
			if id == hangID.Load() && h.Header.Get("Kairos-Attempt") == "2" {
				again++
			}
			if instantOf(t, id).After(killedAt) {
				after++
			}
		}
		if again == 0 || after < 5 {
			return fmt.Errorf("redelivered %d, occurrences after the kill %d", again, after)
		}
		return nil
	}, "the hung occurrence delivered again, and 5 more after the kill")
	if err := store.DeleteSchedule(context.Background(), "acme", "t", "beat"); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, store) // what was claimed before the delete has come

	// Every instant from the first to the last fired, each once, but the
	// killed one twice with one webhook-id.
	byInstant := map[time.Time][]hit{}
	last := first
	for _, h := range rcv.all() {
		at := instantOf(t, h.Header.Get("Kairos-Job-Id"))
		byInstant[at] = append(byInstant[at], h)
		if at.After(last) {
			last = at
		}
	}
	for at := first; !at.After(last); at = at.Add(time.Second) {
		got := byInstant[at]
		want := 1
		if at.Equal(hang) {
			want = 2
		}
		if len(got) != want {
			t.Errorf("occurrence %v: %d requests, want %d", at, len(got), want)
			continue
		}
		if want == 2 && got[0].Header.Get("webhook-id") != got[1].Header.Get("webhook-id") {
			t.Errorf("the redelivery of %v has another webhook-id", at)
		}
	}
	t.Logf("occurrences %v to %v: %d requests", first.Format("15:04:05"), last.Format("15:04:05"), len(rcv.all()))
}

// busyProcess returns the one process of procs with a callback in flight,
// waiting up to 3 s for exactly one to have some.
func busyProcess(t *testing.T, procs []*testproc.Proc) *testproc.Proc {
	t.Helper()
	var busy []*testproc.Proc
	testwait.UntilNil(t, 3*time.Second, func() error { // the hung callback lasts 4 s
		busy = busy[:0]
		for _, p := range procs {
			if v, ok := readMetric(p.URL(t), "kairos_callbacks_in_flight"); ok && v > 0 {
				busy = append(busy, p)
			}
		}
		if len(busy) != 1 {
			return fmt.Errorf("%d processes have callbacks in flight", len(busy))
		}
		return nil
	}, "one process with a callback in flight")
	return busy[0]
}
