package rdb

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// claimActive claims everything due now without finishing it: the
// occurrences stay active, as with a receiver slower than the period.
func claimActive(t *testing.T, s *Store) []kairos.Claimed {
	t.Helper()
	var out []kairos.Claimed
	for sh := range s.Shards() {
		c, err := s.ClaimDue(context.Background(), sh, 500, 0, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Jobs...)
		if c.Refills > 0 {
			if err := s.RefillSchedules(context.Background(), sh, 100); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

func finishDelivered(t *testing.T, s *Store, cl kairos.Claimed) {
	t.Helper()
	a := kairos.Attempt{N: cl.Job.Attempts, At: s.Now(), Duration: time.Millisecond, Status: 200}
	if _, err := s.Finish(context.Background(), cl.Job.JobKey, a, kairos.OutcomeDelivered, time.Time{}); err != nil {
		t.Fatal(err)
	}
}

// max_runs: exactly that many occurrences fire, then the schedule is
// completed, has no pending occurrence, and refuses triggers and backfills.
func TestScheduleMaxRunsCompletes(t *testing.T) {
	s, now, add := newScheduleStore(t)
	ctx := context.Background()
	start := now().Add(500 * time.Millisecond)
	sc := everySecond("tick", start, "")
	sc.MaxRuns = 3
	if _, err := s.PutSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	var fired []string
	for range 10 {
		add(time.Second)
		fired = append(fired, fireDue(t, s)...)
	}
	if len(fired) != 3 {
		t.Fatalf("max_runs 3 fired %v", fired)
	}
	got, err := s.GetSchedule(ctx, "acme", "orders", "tick")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Completed || got.Runs != 3 || !got.Pending.IsZero() || got.MaxRuns != 3 {
		t.Fatalf("after max_runs: completed %v runs %d pending %v", got.Completed, got.Runs, got.Pending)
	}
	if _, err := s.TriggerSchedule(ctx, "acme", "orders", "tick"); !errors.Is(err, kairos.ErrConflict) {
		t.Fatalf("trigger of a completed schedule: %v", err)
	}
	if _, err := s.BackfillSchedule(ctx, "acme", "orders", "tick", []time.Time{start.Add(-time.Second)}); !errors.Is(err, kairos.ErrConflict) {
		t.Fatalf("backfill of a completed schedule: %v", err)
	}
	// a replace keeps the count: still completed, nothing filed
	if _, err := s.PutSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	add(5 * time.Second)
	if more := fireDue(t, s); len(more) != 0 {
		t.Fatalf("a completed schedule replaced fired %v", more)
	}
}

// Triggers count against max_runs, and an occurrence given back unstarted
// (Release) is not counted twice.
func TestScheduleMaxRunsCountsTriggersAndReleases(t *testing.T) {
	s, now, add := newScheduleStore(t)
	ctx := context.Background()
	start := now().Add(500 * time.Millisecond)
	sc := everySecond("tick", start, "")
	sc.MaxRuns = 2
	if _, err := s.PutSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	add(time.Second)
	cs := claimActive(t, s)
	if len(cs) != 1 {
		t.Fatalf("claimed %v", claimedIDs(cs))
	}
	if err := s.Release(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSchedule(ctx, "acme", "orders", "tick"); got.Runs != 0 {
		t.Fatalf("released: runs %d, want 0", got.Runs)
	}
	if got := fireDue(t, s); len(got) != 2 { // the released one and nothing else yet... plus the next if due
		if len(got) != 1 {
			t.Fatalf("after release fired %v", got)
		}
	}
	if _, err := s.TriggerSchedule(ctx, "acme", "orders", "tick"); err != nil {
		t.Fatal(err)
	}
	var fired []string
	for range 5 {
		fired = append(fired, fireDue(t, s)...)
		add(time.Second)
	}
	got, _ := s.GetSchedule(ctx, "acme", "orders", "tick")
	if !got.Completed || got.Runs != 2 {
		t.Fatalf("runs %d completed %v after %v", got.Runs, got.Completed, fired)
	}
}

// overlap skip: while the previous occurrence is active, the next instant
// does not fire and is counted; once it ends, instants fire again.
func TestScheduleOverlapSkip(t *testing.T) {
	s, _, add := newScheduleStore(t)
	ctx := context.Background()
	first := overlapActive(t, s, add, kairos.OverlapSkip)
	got, _ := s.GetSchedule(ctx, "acme", "orders", "tick")
	if got.Skipped != 3 || got.Runs != 1 {
		t.Fatalf("skipped %d runs %d, want 3 and 1", got.Skipped, got.Runs)
	}
	c, err := s.TopicCounters(ctx, "acme", "orders")
	if err != nil || c.Occurrences.Skipped != 3 || c.States["skipped"] != 0 {
		t.Fatalf("counters %+v %v", c, err)
	}
	finishDelivered(t, s, first)
	add(time.Second)
	if cs := claimActive(t, s); len(cs) != 1 {
		t.Fatalf("previous ended, yet fired %v", claimedIDs(cs))
	}
}

// overlap buffer_one: the first instant that finds the previous one active
// waits and fires once it ends; the others meanwhile are skipped.
func TestScheduleOverlapBufferOne(t *testing.T) {
	s, _, add := newScheduleStore(t)
	ctx := context.Background()
	first := overlapActive(t, s, add, kairos.OverlapBufferOne)
	got, _ := s.GetSchedule(ctx, "acme", "orders", "tick")
	if got.Skipped != 2 {
		t.Fatalf("skipped %d, want 2 (one waits)", got.Skipped)
	}
	finishDelivered(t, s, first)
	add(bufferPoll + 100*time.Millisecond)
	cs := claimActive(t, s)
	want := kairos.OccurrenceID("tick", first.Job.RunAt.Add(time.Second)) // the instant after the first
	if !slices.Contains(claimedIDs(cs), want) {
		t.Fatalf("after the previous ended fired %v, want the buffered %s", claimedIDs(cs), want)
	}
}

// overlap buffer_one, deleted while an occurrence is in flight: the
// occurrence that waits for it goes with the schedule, and nothing fires
// beside the one in flight, then or after it ends.
func TestScheduleDeleteCancelsBufferedOccurrence(t *testing.T) {
	s, _, add := newScheduleStore(t)
	ctx := context.Background()
	first := overlapActive(t, s, add, kairos.OverlapBufferOne)
	buffered := kairos.JobKey{Tenant: "acme", Topic: "orders", ID: kairos.OccurrenceID("tick", first.Job.RunAt.Add(time.Second))}
	if _, err := s.GetJob(ctx, buffered); err != nil {
		t.Fatalf("the buffered occurrence %s: %v", buffered.ID, err)
	}
	if err := s.DeleteSchedule(ctx, "acme", "orders", "tick"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetJob(ctx, buffered); !errors.Is(err, kairos.ErrNotFound) {
		t.Errorf("the buffered occurrence outlives its schedule's delete: %v", err)
	}
	add(bufferPoll + 100*time.Millisecond)
	if cs := claimActive(t, s); len(cs) != 0 {
		t.Fatalf("deleted while %s was in flight, it fired %v beside it", first.Job.ID, claimedIDs(cs))
	}
	finishDelivered(t, s, first)
	add(bufferPoll + 100*time.Millisecond)
	if cs := claimActive(t, s); len(cs) != 0 {
		t.Fatalf("deleted, it fired %v after the one in flight ended", claimedIDs(cs))
	}
	c, err := s.TopicCounters(ctx, "acme", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if n := c.States["scheduled"] + c.States["ready"] + c.States["active"]; n != 0 {
		t.Errorf("counters hold %d pending or active jobs after the delete: %+v", n, c.States)
	}
}

// overlapActive puts schedule "tick" (every second, overlap ov), fires its
// first occurrence and keeps it active while three more instants come;
// it returns that first occurrence.
func overlapActive(t *testing.T, s *Store, add func(time.Duration), ov kairos.Overlap) kairos.Claimed {
	t.Helper()
	sc := everySecond("tick", s.Now().Add(500*time.Millisecond), "")
	sc.Overlap = ov
	if _, err := s.PutSchedule(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	add(time.Second)
	first := claimActive(t, s)
	if len(first) != 1 {
		t.Fatalf("claimed %v", claimedIDs(first))
	}
	for range 3 {
		add(time.Second)
		if cs := claimActive(t, s); len(cs) != 0 {
			t.Fatalf("previous still active, yet fired %v", claimedIDs(cs))
		}
	}
	return first[0]
}
