package rdb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// everyPattern fires every d from anchor: the storage tests' pattern (the
// real ones are internal/schedule's).
type everyPattern struct {
	anchor time.Time
	d      time.Duration
	end    time.Time
}

func (p everyPattern) NextN(t time.Time, n int) []time.Time {
	var out []time.Time
	k := int64(0)
	if t.After(p.anchor) || t.Equal(p.anchor) {
		k = int64(t.Sub(p.anchor)/p.d) + 1
	}
	for len(out) < n {
		at := p.anchor.Add(time.Duration(k) * p.d)
		if !p.end.IsZero() && at.After(p.end) {
			break
		}
		out = append(out, at)
		k++
	}
	return out
}

func newScheduleStore(t *testing.T) (*Store, func() time.Time, func(time.Duration)) {
	s, clk := newStore(t, Options{Shards: 4, Patterns: func(sc kairos.Schedule) (Pattern, error) {
		return everyPattern{anchor: sc.StartAt, d: sc.Every, end: sc.EndAt}, nil
	}})
	return s, clk.Now, clk.Add
}

func everySecond(id string, start time.Time, cu kairos.CatchUp) kairos.Schedule {
	return kairos.Schedule{Tenant: "acme", Topic: "orders", ID: id, Every: time.Second, StartAt: start, CatchUp: cu,
		Job: kairos.Job{Payload: []byte(`{"tick":true}`)}}
}

// fireDue claims everything due now (ahead 0) and delivers it, refilling
// schedules as the scanner does; it returns the ids claimed.
func fireDue(t *testing.T, s *Store) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for sh := range s.Shards() {
		for range 10 {
			c, err := s.ClaimDue(ctx, sh, 500, 0, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, cl := range c.Jobs {
				ids = append(ids, cl.Job.ID)
				a := kairos.Attempt{N: cl.Job.Attempts, At: s.Now(), Duration: time.Millisecond, Status: 200}
				if _, err := s.Finish(ctx, cl.Job.JobKey, a, kairos.OutcomeDelivered, time.Time{}); err != nil {
					t.Fatal(err)
				}
			}
			if c.Refills > 0 {
				if err := s.RefillSchedules(ctx, sh, 100); err != nil {
					t.Fatal(err)
				}
			}
			if len(c.Jobs) == 0 && c.Refills == 0 {
				break
			}
		}
	}
	return ids
}

// A schedule's occurrences chain: each claim fires the pending one and
// files the next, across more instants than one queue holds (so refills
// happen), each exactly once, with ids "<id>@<ms>".
func TestScheduleOccurrencesChain(t *testing.T) {
	s, now, add := newScheduleStore(t)
	ctx := context.Background()
	start := now().Add(500 * time.Millisecond)
	if _, err := s.PutSchedule(ctx, everySecond("tick", start, "")); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var order []string
	for range 40 {
		add(time.Second)
		for _, id := range fireDue(t, s) {
			seen[id]++
			order = append(order, id)
		}
	}
	if len(order) != 40 {
		t.Fatalf("40 seconds fired %d occurrences: %v", len(order), order)
	}
	for i, id := range order {
		want := kairos.OccurrenceID("tick", start.Add(time.Duration(i)*time.Second))
		if id != want || seen[id] != 1 {
			t.Fatalf("occurrence %d is %s (seen %d times), want %s once", i, id, seen[id], want)
		}
	}
	sc, err := s.GetSchedule(ctx, "acme", "orders", "tick")
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(39 * time.Second); !sc.LastFired.Equal(want) || !sc.Pending.Equal(want.Add(time.Second)) {
		t.Fatalf("last fired %v pending %v, want %v and a second later", sc.LastFired, sc.Pending, want)
	}
	j, err := s.GetJob(ctx, kairos.JobKey{Tenant: "acme", Topic: "orders", ID: order[3]})
	if err != nil || j.State != kairos.StateDelivered || string(j.Payload) != `{"tick":true}` {
		t.Fatalf("occurrence job: %+v %v", j, err)
	}
}

// After an outage of 10 minutes (no claims), catch-up decides what fires:
// one fires once then goes on, none fires nothing missed, all fires each
// missed instant (up to MaxCatchUp).
func TestScheduleCatchUp(t *testing.T) {
	for _, tc := range []struct {
		cu   kairos.CatchUp
		want int // occurrences fired by the first pass after the outage
	}{{kairos.CatchUpOne, 1}, {kairos.CatchUpNone, 0}, {kairos.CatchUpAll, kairos.MaxCatchUp}} {
		t.Run(string(tc.cu), func(t *testing.T) {
			s, now, add := newScheduleStore(t)
			ctx := context.Background()
			start := now().Add(500 * time.Millisecond)
			if _, err := s.PutSchedule(ctx, everySecond("tick", start, tc.cu)); err != nil {
				t.Fatal(err)
			}
			add(10 * time.Minute)
			fired := 0
			for range 5 { // the outage's claims, refills and what they file as due
				fired += len(fireDue(t, s))
			}
			if fired != tc.want {
				t.Fatalf("after the outage %d occurrences fired, want %d", fired, tc.want)
			}
			add(time.Second)
			if got := fireDue(t, s); len(got) != 1 {
				t.Fatalf("the next second fired %v, want one occurrence", got)
			}
		})
	}
}

// Pause removes the pending occurrence and nothing fires; resume files
// the next future instant without replaying the paused ones; delete
// removes the schedule and its pending occurrence.
func TestSchedulePauseResumeDelete(t *testing.T) {
	s, now, add := newScheduleStore(t)
	ctx := context.Background()
	start := now().Add(500 * time.Millisecond)
	if _, err := s.PutSchedule(ctx, everySecond("tick", start, kairos.CatchUpAll)); err != nil {
		t.Fatal(err)
	}
	if err := s.PauseSchedule(ctx, "acme", "orders", "tick", true); err != nil {
		t.Fatal(err)
	}
	add(5 * time.Second)
	if got := fireDue(t, s); len(got) != 0 {
		t.Fatalf("paused, yet fired %v", got)
	}
	if err := s.PauseSchedule(ctx, "acme", "orders", "tick", false); err != nil {
		t.Fatal(err)
	}
	add(time.Second)
	if got := fireDue(t, s); len(got) != 1 {
		t.Fatalf("resumed: fired %v, want only the next occurrence", got)
	}
	if err := s.DeleteSchedule(ctx, "acme", "orders", "tick"); err != nil {
		t.Fatal(err)
	}
	add(5 * time.Second)
	if got := fireDue(t, s); len(got) != 0 {
		t.Fatalf("deleted, yet fired %v", got)
	}
	if _, err := s.GetSchedule(ctx, "acme", "orders", "tick"); !errors.Is(err, kairos.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	scs, _, err := s.ListSchedules(ctx, "acme", "orders", "", 10)
	if err != nil || len(scs) != 0 {
		t.Fatalf("list after delete: %v %v", scs, err)
	}
}

// Replacing a schedule replaces its pending occurrence: the old pattern
// fires no more.
func TestSchedulePutReplaces(t *testing.T) {
	s, now, add := newScheduleStore(t)
	ctx := context.Background()
	start := now().Add(500 * time.Millisecond)
	if _, err := s.PutSchedule(ctx, everySecond("tick", start, "")); err != nil {
		t.Fatal(err)
	}
	sc := everySecond("tick", start.Add(3*time.Second), "")
	sc.Every = 10 * time.Second
	replaced, err := s.PutSchedule(ctx, sc)
	if err != nil || !replaced {
		t.Fatalf("replace: %v %v", replaced, err)
	}
	var fired []string
	for range 14 {
		add(time.Second)
		fired = append(fired, fireDue(t, s)...)
	}
	want := []string{kairos.OccurrenceID("tick", start.Add(3*time.Second)), kairos.OccurrenceID("tick", start.Add(13*time.Second))}
	if len(fired) != 2 || fired[0] != want[0] || fired[1] != want[1] {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	scs, next, err := s.ListSchedules(ctx, "acme", "orders", "", 10)
	if err != nil || len(scs) != 1 || next != "" || scs[0].Every != 10*time.Second {
		t.Fatalf("list: %+v %q %v", scs, next, err)
	}
}

// Many schedules refill in one call per shard, each keeping its own
// chain; a pattern that ends is marked so, and its claims stop asking for
// refills (a claim per occurrence used to ask once the queue ran short).
func TestScheduleRefillsBatchAndStopAtTheEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("waits on many occurrences: not in the quick tier (-short); make test runs it")
	}
	s, now, add := newScheduleStore(t)
	ctx := context.Background()
	start := now().Add(500 * time.Millisecond)
	const unbounded, bounded, lasting = 20, 10, 30 // bounded ones fire lasting times
	for i := range unbounded + bounded {
		sc := everySecond(fmt.Sprintf("s%02d", i), start, "")
		if i >= unbounded {
			sc.EndAt = start.Add((lasting - 1) * time.Second)
		}
		if _, err := s.PutSchedule(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	for range 40 {
		add(time.Second)
		for _, id := range fireDue(t, s) {
			seen[id]++
		}
	}
	for i := range unbounded + bounded {
		want := 40
		if i >= unbounded {
			want = lasting
		}
		for k := range 45 {
			id := kairos.OccurrenceID(fmt.Sprintf("s%02d", i), start.Add(time.Duration(k)*time.Second))
			if n := seen[id]; (k < want && n != 1) || (k >= want && n != 0) {
				t.Fatalf("occurrence %s fired %d times", id, n)
			}
		}
	}
	// Every occurrence is listed once, delivered (claims list the
	// occurrences they file in one go).
	listed := map[string]int{}
	for cursor := ""; ; {
		pg, err := s.ListJobs(ctx, ListQuery{Tenant: "acme", Topic: "orders", Cursor: cursor, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range pg.Jobs {
			listed[j.ID]++
		}
		if cursor = pg.Next; cursor == "" {
			break
		}
	}
	for id := range seen {
		if listed[id] != 1 {
			t.Fatalf("occurrence %s listed %d times", id, listed[id])
		}
	}
	// the pending ones too: one a still running schedule
	if len(listed) != len(seen)+unbounded {
		t.Fatalf("%d jobs listed, want %d occurrences fired and %d pending", len(listed), len(seen), unbounded)
	}
	// The bounded schedules ended: no claim asks for their refill again.
	for i := range bounded {
		sid := fmt.Sprintf("s%02d", unbounded+i)
		shard, h, err := s.scheduleAt(ctx, "acme", "orders", sid, false)
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.c.HGet(ctx, s.k.schedules(shard), h+"/"+sid).Result()
		if err != nil {
			t.Fatal(err)
		}
		body, err := s.c.HGet(ctx, s.k.scheduleBodies(shard), h+"/"+sid).Result()
		if err != nil {
			t.Fatal(err)
		}
		r, err := decodeSchedule(v, body)
		if err != nil || !r.ended || r.cur != 0 || len(r.queue) != 0 {
			t.Fatalf("%s after its end: %+v %v", sid, r, err)
		}
		if in, err := s.c.SIsMember(ctx, s.k.refills(shard), h+"/"+sid).Result(); err != nil || in {
			t.Fatalf("%s is in its shard's refill set after its end (%v)", sid, err)
		}
	}
}

// A schedule whose whole pattern fits its first queue is ended from its
// put: none of its claims asks for a refill.
func TestScheduleShortPatternNeverRefills(t *testing.T) {
	s, now, add := newScheduleStore(t)
	ctx := context.Background()
	start := now().Add(500 * time.Millisecond)
	sc := everySecond("short", start, "")
	sc.EndAt = start.Add(11 * time.Second)
	if _, err := s.PutSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	fired := 0
	for range 15 {
		add(time.Second)
		for sh := range s.Shards() {
			c, err := s.ClaimDue(ctx, sh, 100, 0, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if c.Refills != 0 {
				t.Fatalf("a claim of an ended pattern asked for %d refills", c.Refills)
			}
			fired += len(c.Jobs)
		}
	}
	if fired != 12 {
		t.Fatalf("fired %d occurrences, want 12", fired)
	}
}

// An occurrence with three live wheel entries in its slot (rescheduled
// twice to its own time) fires once and files its schedule's next
// occurrence once: the claim sets a firing occurrence aside until the
// rest of its slot is done, and its other entries are stale by then.
func TestOccurrenceTwiceInItsSlotFiresOnce(t *testing.T) {
	ctx := context.Background()
	s, now, advance := newScheduleStore(t)
	start := now().Add(time.Second)
	if _, err := s.PutSchedule(ctx, everySecond("tick", start, "")); err != nil {
		t.Fatal(err)
	}
	id := kairos.OccurrenceID("tick", start)
	for range 2 {
		if _, err := s.Reschedule(ctx, key(id), start); err != nil {
			t.Fatal(err)
		}
	}
	advance(time.Second)
	if ids := fireDue(t, s); len(ids) != 1 || ids[0] != id {
		t.Fatalf("fired %v, want %s once", ids, id)
	}
	next := kairos.OccurrenceID("tick", start.Add(time.Second))
	if sc, err := s.GetSchedule(ctx, "acme", "orders", "tick"); err != nil || !sc.Pending.Equal(start.Add(time.Second)) {
		t.Fatalf("pending after the first: %v (%v), want %s", sc.Pending, err, next)
	}
	advance(time.Second)
	if ids := fireDue(t, s); len(ids) != 1 || ids[0] != next {
		t.Fatalf("fired %v, want %s once", ids, next)
	}
}

// TestTriggerStepsOffPatternInstants: a trigger takes its instant from the
// process's clock, which can run ahead of Redis's and name an instant of
// the pattern not filed yet. It steps off it, so that the pattern's
// occurrence is still filed and fires beside the trigger's, and does not
// find the trigger's job under its id.
func TestTriggerStepsOffPatternInstants(t *testing.T) {
	s, now, advance := newScheduleStore(t)
	ctx := context.Background()
	t1 := now().Add(time.Second)
	if _, err := s.PutSchedule(ctx, everySecond("tick", t1, kairos.CatchUpOne)); err != nil {
		t.Fatal(err)
	}
	// another process whose clock runs 2 s ahead: its now is the
	// pattern's second instant, not the pending (first) one
	ahead := New(s.c, Options{Prefix: s.opts.Prefix, Shards: 4, Patterns: s.opts.Patterns, Now: func() time.Time { return now().Add(2 * time.Second) }})
	if err := ahead.Init(ctx); err != nil {
		t.Fatal(err)
	}
	t2 := t1.Add(time.Second)
	j, err := ahead.TriggerSchedule(ctx, "acme", "orders", "tick")
	if err != nil {
		t.Fatal(err)
	}
	if want := kairos.OccurrenceID("tick", t2.Add(time.Millisecond)); j.ID != want {
		t.Errorf("triggered %q, want %q: the instant after the pattern's", j.ID, want)
	}
	advance(time.Second) // t1: fires, and files t2
	if got, want := fireDue(t, s), []string{kairos.OccurrenceID("tick", t1)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("at t1 fired %v, want %v", got, want)
	}
	advance(time.Second + time.Millisecond) // t2 and the trigger's
	got := fireDue(t, s)
	want := []string{kairos.OccurrenceID("tick", t2), kairos.OccurrenceID("tick", t2.Add(time.Millisecond))}
	slices.Sort(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("at t2 fired %v, want %v: the pattern's occurrence and the trigger's", got, want)
	}
}

// Cancelling a schedule's pending occurrence skips that instant only: the
// next one becomes pending and fires, also after more skips in a row than
// the queue holds (the refill files the pending one). Rescheduling it
// moves it out of the schedule: it fires once at its new time, and the
// schedule goes on from its next instant.
func TestCancelOrReschedulePendingOccurrence(t *testing.T) {
	pending := func(t *testing.T, s *Store) time.Time {
		t.Helper()
		sc, err := s.GetSchedule(context.Background(), "acme", "orders", "tick")
		if err != nil {
			t.Fatal(err)
		}
		return sc.Pending
	}
	occ := func(at time.Time) kairos.JobKey {
		return kairos.JobKey{Tenant: "acme", Topic: "orders", ID: kairos.OccurrenceID("tick", at)}
	}
	// tick puts a schedule every second from half a second on; it returns
	// the store, the first instant and the clock's advance.
	tick := func(t *testing.T) (*Store, time.Time, func(time.Duration)) {
		s, now, add := newScheduleStore(t)
		start := now().Add(500 * time.Millisecond)
		if _, err := s.PutSchedule(context.Background(), everySecond("tick", start, "")); err != nil {
			t.Fatal(err)
		}
		return s, start, add
	}
	t.Run("cancel", func(t *testing.T) {
		s, start, add := tick(t)
		ctx := context.Background()
		skipped := 0
		for range scheduleQueue + 4 { // past the queue: a refill files the pending one
			p := pending(t, s)
			if err := s.Cancel(ctx, occ(p)); err != nil {
				t.Fatal(err)
			}
			skipped++
			if p.IsZero() || !pending(t, s).Equal(p.Add(time.Second)) {
				for range 3 { // a claim asks for the refill, which files the pending one
					fireDue(t, s)
				}
			}
			if got, want := pending(t, s), start.Add(time.Duration(skipped)*time.Second); !got.Equal(want) {
				t.Fatalf("after %d cancels the pending occurrence is at %v, want %v", skipped, got, want)
			}
		}
		add(time.Duration(skipped+1) * time.Second) // the clock was half a second before start
		if got := fireDue(t, s); len(got) != 1 || got[0] != occ(start.Add(time.Duration(skipped)*time.Second)).ID {
			t.Fatalf("after the cancels fired %v, want the next instant's occurrence", got)
		}
		add(time.Second)
		if got := fireDue(t, s); len(got) != 1 {
			t.Fatalf("the schedule stopped after the cancels: fired %v", got)
		}
	})
	// The cancelled occurrence stays readable as cancelled; a put of the
	// schedule before its instant files that instant again, over it, and
	// the schedule chains from it.
	t.Run("cancel then put", func(t *testing.T) {
		s, start, add := tick(t)
		ctx := context.Background()
		if err := s.Cancel(ctx, occ(start)); err != nil {
			t.Fatal(err)
		}
		if j, err := s.GetJob(ctx, occ(start)); err != nil || j.State != kairos.StateCancelled {
			t.Fatalf("the cancelled occurrence reads %+v, %v; want cancelled", j, err)
		}
		if _, err := s.PutSchedule(ctx, everySecond("tick", start, "")); err != nil {
			t.Fatal(err)
		}
		if got := pending(t, s); !got.Equal(start) {
			t.Fatalf("after the put the pending occurrence is at %v, want the cancelled instant %v", got, start)
		}
		if j, err := s.GetJob(ctx, occ(start)); err != nil || j.State != kairos.StateScheduled {
			t.Fatalf("the instant filed again reads %+v, %v; want scheduled", j, err)
		}
		var fired []string
		for range 3 {
			add(time.Second)
			fired = append(fired, fireDue(t, s)...)
		}
		want := []string{occ(start).ID, occ(start.Add(time.Second)).ID, occ(start.Add(2 * time.Second)).ID}
		if !slices.Equal(fired, want) {
			t.Fatalf("fired %v, want %v", fired, want)
		}
	})
	t.Run("reschedule", func(t *testing.T) {
		s, start, add := tick(t)
		ctx := context.Background()
		moved := start.Add(2500 * time.Millisecond)
		if _, err := s.Reschedule(ctx, occ(start), moved); err != nil {
			t.Fatal(err)
		}
		if got := pending(t, s); !got.Equal(start.Add(time.Second)) {
			t.Fatalf("after the move the pending occurrence is at %v, want the next instant", got)
		}
		var fired []string
		for range 4 {
			add(time.Second)
			fired = append(fired, fireDue(t, s)...)
		}
		want := []string{occ(start.Add(time.Second)).ID, occ(start.Add(2 * time.Second)).ID, occ(start).ID, occ(start.Add(3 * time.Second)).ID}
		if !slices.Equal(fired, want) {
			t.Fatalf("fired %v, want %v", fired, want)
		}
	})
}

// A trigger is recorded in the schedule (LastTriggered, its occurrence's
// instant) without touching what the pattern fired or its pending one; a
// meta made from a version that a put replaced is not written.
func TestTriggerIsRecorded(t *testing.T) {
	s, now, add := newScheduleStore(t)
	ctx := context.Background()
	if _, err := s.PutSchedule(ctx, everySecond("tick", now().Add(time.Hour), "")); err != nil {
		t.Fatal(err)
	}
	before, err := s.GetSchedule(ctx, "acme", "orders", "tick")
	if err != nil {
		t.Fatal(err)
	}
	add(1500 * time.Microsecond)
	j, err := s.TriggerSchedule(ctx, "acme", "orders", "tick")
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.GetSchedule(ctx, "acme", "orders", "tick")
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != kairos.OccurrenceID("tick", after.LastTriggered) || !after.LastFired.IsZero() || !after.Pending.Equal(before.Pending) {
		t.Errorf("triggered %s: LastTriggered %s, LastFired %s, pending %s (was %s)", j.ID, after.LastTriggered, after.LastFired, after.Pending, before.Pending)
	}
	if d := cmp.Diff(before.Job, after.Job); d != "" || after.Every != before.Every || !after.StartAt.Equal(before.StartAt) {
		t.Errorf("the trigger changed the schedule (-before +after):\n%s", d)
	}
	// a put between the read of a meta and its write: that write is refused
	shard, h, err := s.scheduleAt(ctx, "acme", "orders", "tick", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutSchedule(ctx, everySecond("tick", now().Add(time.Hour), "")); err != nil {
		t.Fatal(err)
	}
	n, err := s.run(ctx, schedmarkScript, []string{s.k.schedules(shard), s.k.scheduleBodies(shard)}, field(h, "tick"), 1, `{"created":1,"updated":1}`).Int()
	if err != nil || n != replyReplaced {
		t.Errorf("a mark made from version 1 after a put: reply %d (%v), want %d", n, err, replyReplaced)
	}
}
