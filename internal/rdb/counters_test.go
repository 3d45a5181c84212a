package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// A topic's counters count its schedule's occurrences fired, delivered and
// dead beside its jobs by state: one delivered after a retry fired once; a
// claim given back unstarted did not fire; a trigger and a replayed dead
// occurrence fire; an occurrence dropped by catch_up "none" does not; plain
// jobs of the topic are no occurrences.
func TestOccurrenceCounters(t *testing.T) {
	s, now, add := newScheduleStore(t)
	ctx := context.Background()
	start := now().Add(500 * time.Millisecond)
	if _, err := s.PutSchedule(ctx, everySecond("tick", start, "")); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, "user@example.com", now()) // ids with an @ that are not occurrences
	enqueue(t, s, "release@1.2", now())
	for _, c := range claimAll(t, s, 0) {
		ok := c.Job.ID == "user@example.com"
		finishJob(t, s, c.Job, now(), 500, ok, !ok, time.Time{})
	}
	wantOccurrences(t, s, Occurrences{})

	var dead string
	for i := range 5 {
		add(time.Second)
		cs := claimAll(t, s, 0)
		if i == 3 { // given back unstarted, then claimed again
			if err := s.Release(ctx, cs); err != nil {
				t.Fatal(err)
			}
			cs = claimAll(t, s, 0)
		}
		for _, c := range cs {
			switch {
			case c.Job.Attempts == 2: // occurrence 1's retry
				finishJob(t, s, c.Job, now(), 200, true, false, time.Time{})
			case c.Job.Attempts != 1:
				t.Fatalf("second %d claimed %s for attempt %d", i, c.Job.ID, c.Job.Attempts)
			case i == 1:
				finishJob(t, s, c.Job, now(), 503, false, false, now().Add(500*time.Millisecond))
			case i == 2:
				dead = c.Job.ID
				finishJob(t, s, c.Job, now(), 500, false, true, time.Time{})
			default:
				finishJob(t, s, c.Job, now(), 200, true, false, time.Time{})
			}
		}
		if want := 1 + b2i(i == 2); len(cs) != want {
			t.Fatalf("second %d claimed %v, want %d jobs", i, claimedIDs(cs), want)
		}
	}
	wantOccurrences(t, s, Occurrences{Fired: 5, Delivered: 4, Dead: 1})

	if _, err := s.TriggerSchedule(ctx, "acme", "orders", "tick"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Replay(ctx, key(dead)); err != nil {
		t.Fatal(err)
	}
	for _, c := range claimAll(t, s, 0) {
		finishJob(t, s, c.Job, now(), 200, true, false, time.Time{})
	}
	wantOccurrences(t, s, Occurrences{Fired: 7, Delivered: 6, Dead: 1})

	// An outage: "tick" (catch_up one) fires once for it, "skip" (none) not at all.
	if _, err := s.PutSchedule(ctx, everySecond("skip", now().Add(500*time.Millisecond), kairos.CatchUpNone)); err != nil {
		t.Fatal(err)
	}
	add(10 * time.Minute)
	fired := 0
	for range 5 {
		fired += len(fireDue(t, s))
	}
	if fired != 1 {
		t.Fatalf("after the outage %d occurrences fired, want 1", fired)
	}
	wantOccurrences(t, s, Occurrences{Fired: 8, Delivered: 7, Dead: 1})
	// 7 occurrences and user@example.com delivered; the dead occurrence was replayed;
	// each schedule's pending occurrence
	wantCounts(t, s, map[kairos.State]int64{kairos.StateDelivered: 8, kairos.StateDead: 1, kairos.StateScheduled: 2})
}

func wantOccurrences(t *testing.T, s *Store, want Occurrences) {
	t.Helper()
	c, err := s.TopicCounters(context.Background(), "acme", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, c.Occurrences); d != "" {
		t.Errorf("occurrences (-want +got):\n%s", d)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The counter fields read back: plain moves count by state only, marked
// ones by state and as occurrence events.
func TestCountersAdd(t *testing.T) {
	c := Counters{States: map[kairos.State]int64{}}
	for f, n := range map[string]int64{
		"scheduled": 3, "scheduled>active": 1, "occ:scheduled>active": 4, "occ:ready>active": 2,
		"occ:active>ready": 1, "active>retrying": 2, "retrying>active": 2, "occ:active>delivered": 3,
		"occ:active>dead": 1, "active>delivered": 1, "ready": 3, "dead>ready": 1,
	} {
		c.add(f, n)
	}
	want := Counters{
		States: map[kairos.State]int64{kairos.StateScheduled: -2, kairos.StateReady: 3, kairos.StateActive: 1,
			kairos.StateRetrying: 0, kairos.StateDelivered: 4, kairos.StateDead: 0},
		Occurrences: Occurrences{Fired: 5, Delivered: 3, Dead: 1},
	}
	if d := cmp.Diff(want, c); d != "" {
		t.Errorf("counters (-want +got):\n%s", d)
	}
}
