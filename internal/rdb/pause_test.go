package rdb

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

func pauseTopic(t *testing.T, s *Store, pause bool) kairos.Topic {
	t.Helper()
	tp, err := s.PauseTopic(context.Background(), "acme", "orders", pause)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Paused != pause {
		t.Fatalf("PauseTopic(%v) answered paused %v", pause, tp.Paused)
	}
	return tp
}

// A paused topic's due jobs wait as they are: no claim starts them, a
// cancel or reschedule meanwhile works, jobs keep arriving, and resume
// fires every one still waiting, oldest due first, as first attempts.
func TestPauseHoldsJobsAndResumeFiresThemOldestFirst(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 4})
	if _, _, err := s.PutTopic(ctx, kairos.Topic{Tenant: "acme", Name: "orders", CallbackURL: "http://127.0.0.1:9/x"}); err != nil {
		t.Fatal(err)
	}
	t0 := clk.Now()
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for i, id := range ids {
		enqueue(t, s, id, t0.Add(time.Duration(i+1)*time.Second))
	}
	pauseTopic(t, s, true)
	if tp, err := s.GetTopic(ctx, "acme", "orders"); err != nil || !tp.Paused {
		t.Fatalf("get topic after pause: paused %v, %v", tp.Paused, err)
	}
	// A PUT of the topic while paused leaves it paused.
	if tp, _, err := s.PutTopic(ctx, kairos.Topic{Tenant: "acme", Name: "orders", CallbackURL: "http://127.0.0.1:9/y"}); err != nil || !tp.Paused {
		t.Fatalf("put topic while paused: paused %v, %v", tp.Paused, err)
	}
	for range 10 {
		clk.Add(time.Second)
		if cs := claimAll(t, s, 0); len(cs) != 0 {
			t.Fatalf("paused, yet claimed %v", claimedIDs(cs))
		}
	}
	enqueue(t, s, "late", clk.Now()) // arrives while paused, due at once
	if cs := claimAll(t, s, 0); len(cs) != 0 {
		t.Fatalf("paused, yet claimed %v", claimedIDs(cs))
	}
	if err := s.Cancel(ctx, key("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reschedule(ctx, key("c"), clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// held jobs keep their state: scheduled, as created before due
	wantCounts(t, s, map[kairos.State]int64{kairos.StateReady: 1, kairos.StateScheduled: 7, kairos.StateCancelled: 1})
	for _, id := range []string{"a", "d", "late"} {
		if j := getJob(t, s, id); j.Attempts != 0 || (j.State != kairos.StateReady && j.State != kairos.StateScheduled) {
			t.Fatalf("held job %s: %s, %d attempts", id, j.State, j.Attempts)
		}
	}

	pauseTopic(t, s, false)
	cs := claimAll(t, s, 0)
	got := claimedIDs(cs)
	// Shards are claimed one after another: order within the topic is
	// by due time in each shard.
	want := []string{"a", "d", "e", "f", "g", "h", "late"}
	if len(got) != len(want) {
		t.Fatalf("resumed: claimed %v, want %v", got, want)
	}
	for _, c := range cs {
		if c.Job.Attempts != 1 {
			t.Fatalf("%s claimed as attempt %d, want 1", c.Job.ID, c.Job.Attempts)
		}
	}
	byShard := map[int][]kairos.Claimed{}
	for _, c := range cs {
		sh := s.k.shardOf(c.Job.JobKey)
		byShard[sh] = append(byShard[sh], c)
	}
	for sh, cs := range byShard {
		if !slices.IsSortedFunc(cs, func(a, b kairos.Claimed) int { return a.Job.RunAt.Compare(b.Job.RunAt) }) {
			t.Fatalf("shard %d fired out of due order: %v", sh, claimedIDs(cs))
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("resumed: claimed %v, want %v", got, want)
	}
	if tp, err := s.GetTopic(ctx, "acme", "orders"); err != nil || tp.Paused {
		t.Fatalf("get topic after resume: paused %v, %v", tp.Paused, err)
	}
	for sh := range s.Shards() {
		if n, err := s.c.Exists(ctx, s.k.parkSet(sh), s.k.parked(sh, "1")).Result(); err != nil || n != 0 {
			t.Fatalf("shard %d keeps %d hold keys after resume (%v)", sh, n, err)
		}
	}
	for _, c := range cs {
		if _, err := s.Finish(ctx, c.Job.JobKey, kairos.Attempt{N: 1, At: clk.Now(), Status: 204}, kairos.OutcomeDelivered, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	// The rescheduled one fires at its new time.
	clk.Add(time.Hour)
	claimOne(t, s, "c")
}

// A schedule of a paused topic files no occurrence while paused: its held
// occurrence fires at resume, standing for the missed ones (catch-up
// "one"), and the schedule goes on.
func TestPausedTopicHoldsScheduleOccurrences(t *testing.T) {
	ctx := context.Background()
	s, now, add := newScheduleStore(t)
	if _, _, err := s.PutTopic(ctx, kairos.Topic{Tenant: "acme", Name: "orders", CallbackURL: "http://127.0.0.1:9/x"}); err != nil {
		t.Fatal(err)
	}
	start := now().Add(500 * time.Millisecond)
	if _, err := s.PutSchedule(ctx, everySecond("tick", start, "")); err != nil {
		t.Fatal(err)
	}
	pauseTopic(t, s, true)
	for range 10 {
		add(time.Second)
		if got := fireDue(t, s); len(got) != 0 {
			t.Fatalf("paused, yet fired %v", got)
		}
	}
	pauseTopic(t, s, false)
	if got := fireDue(t, s); len(got) != 1 || got[0] != kairos.OccurrenceID("tick", start) {
		t.Fatalf("resumed: fired %v, want the held occurrence alone", got)
	}
	add(time.Second)
	if got := fireDue(t, s); len(got) != 1 {
		t.Fatalf("the second after resume fired %v, want the next occurrence", got)
	}
}

// A job whose lease lapses while its topic is paused is held, as retrying
// with the lost attempt logged, and fires as attempt 2 on resume.
func TestPauseHoldsALapsedLease(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{ReadyLease: 2 * time.Second, LeaseGrace: time.Second})
	if _, _, err := s.PutTopic(ctx, kairos.Topic{Tenant: "acme", Name: "orders", CallbackURL: "http://127.0.0.1:9/x"}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, "o1", clk.Now())
	claimOne(t, s, "o1")
	pauseTopic(t, s, true)
	clk.Add(time.Minute)
	if cs := claimAll(t, s, 0); len(cs) != 0 {
		t.Fatalf("paused, yet claimed %v", claimedIDs(cs))
	}
	if j := getJob(t, s, "o1"); j.State != kairos.StateRetrying || j.Attempts != 1 || len(j.Log) != 1 {
		t.Fatalf("held after a lapsed lease: %s, %d attempts, log %+v", j.State, j.Attempts, j.Log)
	}
	pauseTopic(t, s, false)
	if c := claimOne(t, s, "o1"); c.Job.Attempts != 2 {
		t.Fatalf("resumed as attempt %d, want 2", c.Job.Attempts)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateActive: 1})
}
