package rdb

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Backfill fires each instant of a range once; twice over one range fires
// nothing more, and instants the pattern fired are not fired again.
func TestScheduleBackfillTwice(t *testing.T) {
	s, now, add := newScheduleStore(t)
	ctx := context.Background()
	start := now().Add(-10*time.Second + 500*time.Millisecond)
	if _, err := s.PutSchedule(ctx, everySecond("tick", start, "")); err != nil {
		t.Fatal(err)
	}
	add(time.Second)
	byPattern := fireDue(t, s) // the first instant after the put
	if len(byPattern) != 1 {
		t.Fatalf("pattern fired %v", byPattern)
	}
	var instants []time.Time
	for i := range 14 { // the past ten seconds, the one the pattern fired, and future ones
		instants = append(instants, start.Add(time.Duration(i)*time.Second))
	}
	n, err := s.BackfillSchedule(ctx, "acme", "orders", "tick", instants)
	if err != nil || n != 10 {
		t.Fatalf("backfill filed %d (%v), want the 10 past instants", n, err)
	}
	if n, err := s.BackfillSchedule(ctx, "acme", "orders", "tick", instants); err != nil || n != 0 {
		t.Fatalf("second backfill filed %d (%v), want 0", n, err)
	}
	fired := fireDue(t, s)
	if len(fired) != 10 || slices.Contains(fired, byPattern[0]) {
		t.Fatalf("backfill fired %v", fired)
	}
	if n, err := s.BackfillSchedule(ctx, "acme", "orders", "tick", instants); err != nil || n != 0 {
		t.Fatalf("backfill after delivery filed %d (%v), want 0", n, err)
	}
	sc, _ := s.GetSchedule(ctx, "acme", "orders", "tick")
	if want := start.Add(9 * time.Second); !sc.LastBackfilled.Equal(want) {
		t.Fatalf("last backfilled %v, want %v", sc.LastBackfilled, want)
	}
	add(time.Second)
	if got := fireDue(t, s); len(got) != 1 {
		t.Fatalf("the pattern goes on: fired %v", got)
	}
}

// A backfill files no more instants than max_runs leaves, so its count
// is what fires.
func TestScheduleBackfillStopsAtMaxRuns(t *testing.T) {
	s, now, add := newScheduleStore(t)
	ctx := context.Background()
	start := now().Add(-10*time.Second + 500*time.Millisecond)
	sc := everySecond("tick", start, "")
	sc.MaxRuns = 5
	if _, err := s.PutSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	add(time.Second)
	if got := fireDue(t, s); len(got) != 1 {
		t.Fatalf("pattern fired %v", got)
	}
	var instants []time.Time
	for i := range 10 {
		instants = append(instants, start.Add(time.Duration(i)*time.Second))
	}
	n, err := s.BackfillSchedule(ctx, "acme", "orders", "tick", instants)
	if err != nil || n != 4 {
		t.Fatalf("backfill filed %d (%v), want the 4 runs max_runs 5 leaves", n, err)
	}
	if fired := fireDue(t, s); len(fired) != 4 {
		t.Fatalf("backfill fired %v, want 4", fired)
	}
	got, err := s.GetSchedule(ctx, "acme", "orders", "tick")
	if err != nil || got.Runs != 5 || !got.Completed {
		t.Fatalf("runs %d completed %v (%v)", got.Runs, got.Completed, err)
	}
}
