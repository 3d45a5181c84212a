package rdb

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// A delivered outcome with a notice files the job's success notification
// (id "<id>~ok.<n>"), due at once: once, and not for a stale outcome nor
// for a retrying one.
func TestDeliveredOutcomeFilesItsSuccessNotice(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	enqueue(t, s, "s1", clk.Now())
	c := claimOne(t, s, "s1")
	notice := kairos.Notice{URL: "https://hooks.example.com/done", Body: []byte(`{"job_id":"s1"}`)}
	a := kairos.Attempt{N: 1, At: clk.Now(), Status: 200, Response: "ok"}
	for range 2 { // a retried Finish is applied once
		if _, err := s.Finish(ctx, c.Job.JobKey, a, kairos.OutcomeDelivered, time.Time{}, notice); err != nil {
			t.Fatal(err)
		}
	}
	cs := claimAll(t, s, 0)
	if len(cs) != 1 || cs[0].Job.ID != kairos.SuccessNoticeID("s1", 1) {
		t.Fatalf("claimed %v, want the success notification alone", claimedIDs(cs))
	}
	n := cs[0].Job
	if n.CallbackURL != notice.URL || string(n.Payload) != string(notice.Body) {
		t.Fatalf("notification job: url %q payload %s", n.CallbackURL, n.Payload)
	}
	if j := getJob(t, s, "s1"); j.State != kairos.StateDelivered {
		t.Fatalf("the job is %s", j.State)
	}
	// A retrying outcome files no notice, whatever it is handed.
	enqueue(t, s, "s2", clk.Now())
	c2 := claimOne(t, s, "s2")
	a2 := kairos.Attempt{N: 1, At: clk.Now(), Status: 500}
	if _, err := s.Finish(ctx, c2.Job.JobKey, a2, kairos.OutcomeRetrying, clk.Now().Add(time.Hour), notice); err != nil {
		t.Fatal(err)
	}
	// A stale delivered outcome files nothing.
	enqueue(t, s, "s3", clk.Now())
	c3 := claimOne(t, s, "s3")
	stale := kairos.Attempt{N: c3.Job.Attempts + 1, At: clk.Now(), Status: 200}
	if _, err := s.Finish(ctx, c3.Job.JobKey, stale, kairos.OutcomeDelivered, time.Time{}, notice); err != nil {
		t.Fatal(err)
	}
	if cs := claimAll(t, s, 0); len(cs) != 0 {
		t.Fatalf("a retrying or stale outcome filed %v", claimedIDs(cs))
	}
}

// Every attempt keeps its status, response excerpt and kept headers, a
// delivery as well as a failure, in the log and for the retention period.
func TestAttemptsKeepTheirResponse(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	enqueue(t, s, "r1", clk.Now())
	c := claimOne(t, s, "r1")
	failed := kairos.Attempt{N: 1, At: clk.Now().Truncate(time.Millisecond), Duration: 12 * time.Millisecond, Status: 503,
		Error: "callback answered 503 Service Unavailable", Response: `{"error":"busy"}`,
		ResponseHeaders: map[string]string{"Content-Type": "application/json", "Retry-After": "5"}}
	if _, err := s.Finish(ctx, c.Job.JobKey, failed, kairos.OutcomeRetrying, clk.Now()); err != nil {
		t.Fatal(err)
	}
	c = claimOne(t, s, "r1")
	big := strings.Repeat("é", kairos.MaxResponseBytes) // twice the most a log line keeps
	ok := kairos.Attempt{N: 2, At: clk.Now().Truncate(time.Millisecond), Duration: 3 * time.Millisecond, Status: 201,
		Response: big, ResponseHeaders: map[string]string{"Location": "/orders/7", "Content-Type": "text/plain"}}
	if _, err := s.Finish(ctx, c.Job.JobKey, ok, kairos.OutcomeDelivered, time.Time{}); err != nil {
		t.Fatal(err)
	}
	j := getJob(t, s, "r1")
	ok.Response = big[:kairos.MaxResponseBytes]
	if diff := cmp.Diff([]kairos.Attempt{failed, ok}, j.Log); diff != "" {
		t.Errorf("attempt log (-want +got):\n%s", diff)
	}
}

// An attempt with no response body and no kept header costs its job's
// record no byte more than an attempt did before responses were kept.
func TestEmptyAnswerAddsNoBytes(t *testing.T) {
	a := kairos.Attempt{N: 1, At: time.UnixMilli(1_750_000_000_000), Duration: 3 * time.Millisecond, Status: 200}
	line, err := logLine(a)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"n":1,"t":1750000000000,"ms":3,"status":200}` + "\n"; line != want {
		t.Errorf("log line = %q; want %q", line, want)
	}
}

// A job created again under an id whose notification of an earlier job
// is finished (delivered or dead, within its retention) gets its own
// notification: the finished one is replaced, not kept in its place.
func TestNotificationOfAReusedIDIsSent(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	for round, end := range []kairos.Outcome{kairos.OutcomeDelivered, kairos.OutcomeDead, kairos.OutcomeDelivered} {
		enqueue(t, s, "r1", clk.Now())
		c := claimOne(t, s, "r1")
		body := fmt.Sprintf(`{"round":%d}`, round)
		notice := kairos.Notice{URL: "https://hooks.example.com/done", Body: []byte(body)}
		a := kairos.Attempt{N: 1, At: clk.Now(), Status: 200}
		if _, err := s.Finish(ctx, c.Job.JobKey, a, kairos.OutcomeDelivered, time.Time{}, notice); err != nil {
			t.Fatal(err)
		}
		cs := claimAll(t, s, 0)
		if len(cs) != 1 || cs[0].Job.ID != kairos.SuccessNoticeID("r1", 1) || string(cs[0].Job.Payload) != body {
			t.Fatalf("round %d: claimed %v, want the notification with %s", round, claimedIDs(cs), body)
		}
		// the notification itself ends delivered or dead
		na := kairos.Attempt{N: 1, At: clk.Now(), Status: 200}
		if end == kairos.OutcomeDead {
			na.Status = 410
		}
		if _, err := s.Finish(ctx, cs[0].Job.JobKey, na, end, time.Time{}); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Millisecond)
	}
	n := getJob(t, s, kairos.SuccessNoticeID("r1", 1))
	if n.State != kairos.StateDelivered {
		t.Fatalf("the last notification is %s", n.State)
	}
	for sh := range s.k.shards {
		for _, k := range []string{s.k.deadTenant(sh, "acme"), s.k.deadAll(sh)} {
			if n := s.c.ZCard(ctx, k).Val(); n != 0 {
				t.Fatalf("%s holds %d dead letters; the replaced dead notification must leave", k, n)
			}
		}
	}
	// r1 delivered, its three notifications: one dead, replaced; two
	// delivered, the first replaced
	wantCounts(t, s, map[kairos.State]int64{kairos.StateDelivered: 5})
}
