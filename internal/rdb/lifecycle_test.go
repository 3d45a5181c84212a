package rdb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// TestLeaseLapseHandsOutAgain: a claimed job whose worker vanished is
// claimed again once its lease lapses (due + timeout + ready lease + grace),
// as attempt 2, with the lost attempt logged; the lost attempt's late
// outcome changes nothing.
func TestLeaseLapseHandsOutAgain(t *testing.T) {
	s, clk := newStore(t, Options{ReadyLease: 2 * time.Second, LeaseGrace: time.Second})
	enqueue(t, s, "o1", clk.Now())
	first := claimOne(t, s, "o1")
	lease := 5*time.Second + 2*time.Second + time.Second // claimAll's lease timeout, ready lease, grace
	clk.Add(lease - 200*time.Millisecond)
	if cs := claimAll(t, s, 0); len(cs) != 0 {
		t.Fatalf("claimed %v within the lease", claimedIDs(cs))
	}
	clk.Add(200 * time.Millisecond)
	again := claimOne(t, s, "o1")
	if again.Job.Attempts != 2 || len(again.Job.Log) != 1 || !strings.Contains(again.Job.Log[0].Error, "worker lost") {
		t.Fatalf("claimed again: attempts %d log %+v", again.Job.Attempts, again.Job.Log)
	}
	if st := finishJob(t, s, first.Job, clk.Now(), 200, true, false, time.Time{}); st != kairos.StateActive {
		t.Fatalf("after the lost attempt's outcome: state %q, want active (the outcome is stale)", st)
	}
	if j := getJob(t, s, "o1"); j.State != kairos.StateActive || j.Attempts != 2 {
		t.Fatalf("after a stale finish: %s attempt %d", j.State, j.Attempts)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateActive: 1})
}

func TestRetryThenDeadThenReplay(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	enqueue(t, s, "o1", clk.Now())
	c := claimOne(t, s, "o1")
	retryAt := clk.Now().Add(2 * time.Second)
	if st := finishJob(t, s, c.Job, clk.Now(), 500, false, false, retryAt); st != kairos.StateRetrying {
		t.Fatalf("finish: %s", st)
	}
	if j := getJob(t, s, "o1"); j.State != kairos.StateRetrying || !j.NextRunAt.Equal(retryAt) {
		t.Fatalf("retrying job: %s next %v", j.State, j.NextRunAt)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateRetrying: 1})
	clk.Add(2 * time.Second)
	c = claimOne(t, s, "o1")
	if c.Job.Attempts != 2 {
		t.Fatalf("retry attempt %d, want 2", c.Job.Attempts)
	}
	if st := finishJob(t, s, c.Job, clk.Now(), 500, false, true, time.Time{}); st != kairos.StateDead {
		t.Fatalf("finish: %s", st)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateDead: 1})
	page, err := s.ListJobs(ctx, ListQuery{Tenant: "acme", Topic: "orders", State: kairos.StateDead, Limit: 10})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != "o1" {
		t.Fatalf("dead letters: %+v %v", page, err)
	}
	if _, err := s.Reschedule(ctx, key("o1"), clk.Now()); !errors.Is(err, kairos.ErrConflict) {
		t.Fatalf("reschedule a dead job: %v", err)
	}
	j, err := s.Replay(ctx, key("o1"))
	// attempt numbers go on: the log shows the replay after attempt 2
	if err != nil || j.State != kairos.StateReady || j.Attempts != 2 || j.ReplayedAfter != 2 || len(j.Log) != 3 ||
		j.Log[2].Event != kairos.AttemptReplay || j.Log[2].N != 2 || !j.Log[2].At.Equal(clk.Now()) {
		t.Fatalf("replay: %+v %v", j, err)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateReady: 1})
	if _, err := s.Replay(ctx, key("o1")); !errors.Is(err, kairos.ErrConflict) {
		t.Fatalf("replay a job that is not dead: %v", err)
	}
	c = claimOne(t, s, "o1")
	if c.Job.Attempts != 3 || c.Job.ReplayedAfter != 2 || c.Job.AttemptsLeft() != c.Job.MaxAttempts-1 {
		t.Fatalf("first attempt after the replay: attempt %d, replayed after %d", c.Job.Attempts, c.Job.ReplayedAfter)
	}
	if st := finishJob(t, s, c.Job, clk.Now(), 204, true, false, time.Time{}); st != kairos.StateDelivered {
		t.Fatalf("finish after replay: %s", st)
	}
	if j := getJob(t, s, "o1"); len(j.Log) != 4 || j.Log[3].N != 3 || j.Log[3].Status != 204 || j.Log[2].Event != kairos.AttemptReplay {
		t.Fatalf("log after the replay: %+v", j.Log)
	}
	page, _ = s.ListJobs(ctx, ListQuery{Tenant: "acme", Topic: "orders", State: kairos.StateDead, Limit: 10})
	if len(page.Jobs) != 0 {
		t.Fatalf("dead letters after the replay: %+v", page.Jobs)
	}
}

// TestCancelAndRescheduleLeaveStaleEntries: a rescheduled job fires once,
// at its new time; a cancelled one never; entries they left are skipped.
func TestCancelAndRescheduleLeaveStaleEntries(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	enqueue(t, s, "moved", clk.Now().Add(time.Second))
	enqueue(t, s, "gone", clk.Now().Add(time.Second))
	if _, err := s.Reschedule(ctx, key("moved"), clk.Now().Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(ctx, key("gone")); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(ctx, key("gone")); err != nil {
		t.Fatalf("cancel twice: %v, want nothing changed", err)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 1, kairos.StateCancelled: 1})
	clk.Add(time.Second)
	if cs := claimAll(t, s, 0); len(cs) != 0 {
		t.Fatalf("claimed %v at the old time", claimedIDs(cs))
	}
	clk.Add(2 * time.Second)
	c := claimOne(t, s, "moved")
	if !c.Due.Equal(clk.Now()) {
		t.Fatalf("due %v, want %v", c.Due, clk.Now())
	}
	for _, op := range []func() error{
		func() error { return s.Cancel(ctx, key("moved")) },
		func() error { _, err := s.Reschedule(ctx, key("moved"), clk.Now()); return err },
		func() error { _, err := s.Enqueue(ctx, kairos.Job{JobKey: key("moved"), RunAt: clk.Now()}); return err },
	} {
		if err := op(); !errors.Is(err, kairos.ErrConflict) {
			t.Fatalf("an active job changed: %v", err)
		}
	}
	finishJob(t, s, c.Job, clk.Now(), 200, true, false, time.Time{})
	if err := s.Cancel(ctx, key("moved")); !errors.Is(err, kairos.ErrConflict) {
		t.Fatalf("cancel a delivered job: %v", err)
	}
	clk.Add(time.Minute)
	if cs := claimAll(t, s, 0); len(cs) != 0 {
		t.Fatalf("claimed %v after delivery", claimedIDs(cs))
	}
}

// TestUpsertReplacesUnfiredJob: creating an id that exists and has not
// fired replaces it, keeping its identity; it fires once, at the new time.
func TestUpsertReplacesUnfiredJob(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	first := enqueue(t, s, "o1", clk.Now().Add(time.Second))
	res := s.EnqueueBatch(ctx, []kairos.Job{{JobKey: key("o1"), RunAt: clk.Now().Add(2 * time.Second), Payload: []byte(`"new"`)}})
	if res[0].Err != nil || !res[0].Replaced() || res[0].Job.UID != first.UID || !res[0].Job.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("replace: %+v", res[0])
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 1})
	clk.Add(time.Second)
	if cs := claimAll(t, s, 0); len(cs) != 0 {
		t.Fatalf("claimed %v at the replaced time", claimedIDs(cs))
	}
	clk.Add(time.Second)
	if c := claimOne(t, s, "o1"); string(c.Job.Payload) != `"new"` {
		t.Fatalf("payload %s", c.Job.Payload)
	}
}

// TestBatchRepeatsAndOldOnes: one batch that names an id twice and an id
// stored before writes each in order: the second of a pair replaces the
// first.
func TestBatchRepeatsAndOldOnes(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	old := enqueue(t, s, "old", clk.Now().Add(time.Hour))
	res := s.EnqueueBatch(ctx, []kairos.Job{
		{JobKey: key("a"), RunAt: clk.Now().Add(time.Hour), Payload: []byte(`1`)},
		{JobKey: key("old"), RunAt: clk.Now().Add(2 * time.Hour), Payload: []byte(`2`)},
		{JobKey: key("a"), RunAt: clk.Now().Add(3 * time.Hour), Payload: []byte(`3`)},
		{JobKey: key("b"), RunAt: clk.Now().Add(time.Hour), Payload: []byte(`4`)},
	})
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
	}
	if res[0].Replaced() || !res[1].Replaced() || !res[2].Replaced() || res[3].Replaced() || res[1].Job.UID != old.UID {
		t.Fatalf("replaced flags %v %v %v %v", res[0].Replaced(), res[1].Replaced(), res[2].Replaced(), res[3].Replaced())
	}
	if j := getJob(t, s, "a"); string(j.Payload) != `3` || !j.RunAt.Equal(clk.Now().Add(3*time.Hour)) {
		t.Fatalf("a = %s at %v", j.Payload, j.RunAt)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 3})
}

// TestWheelCascadesFarJobs: jobs due seconds, minutes, hours and days ahead
// wait in the wheel's wider levels and are each claimed once, at their due
// time, after their slots cascade down.
func TestWheelCascadesFarJobs(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	start := clk.Now()
	aheads := []time.Duration{5 * time.Second, 3 * time.Minute, 2 * time.Hour, 50 * time.Hour}
	for i, d := range aheads {
		enqueue(t, s, "j"+string(rune('0'+i)), start.Add(d))
	}
	levels := map[string]bool{}
	for _, m := range s.c.ZRange(ctx, s.k.due(0), 0, -1).Val() {
		levels[m[:1]] = true
	}
	if len(levels) != 4 {
		t.Fatalf("wheel slots %v: want one level for each job", s.c.ZRange(ctx, s.k.due(0), 0, -1).Val())
	}
	claimed := map[string]time.Time{}
	for step := time.Duration(0); step <= 50*time.Hour+time.Second; step += 250 * time.Millisecond {
		if step > 10*time.Second && step < 2*time.Minute+50*time.Second {
			step = 2*time.Minute + 50*time.Second // skip quiet spans in big steps
		}
		clk.Set(start.Add(step))
		for _, c := range claimAll(t, s, 0) {
			if _, dup := claimed[c.Job.ID]; dup {
				t.Fatalf("%s claimed twice", c.Job.ID)
			}
			claimed[c.Job.ID] = clk.Now()
			finishJob(t, s, c.Job, clk.Now(), 200, true, false, time.Time{})
		}
		if len(claimed) == 2 && step < 2*time.Hour-time.Minute {
			step = 2*time.Hour - time.Minute
		} else if len(claimed) == 3 && step < 50*time.Hour-time.Minute {
			step = 50*time.Hour - time.Minute
		}
	}
	for i, d := range aheads {
		id := "j" + string(rune('0'+i))
		at, ok := claimed[id]
		if !ok || at.Before(start.Add(d)) || at.Sub(start.Add(d)) >= 250*time.Millisecond {
			t.Errorf("%s due at +%v claimed at +%v (claimed: %v)", id, d, at.Sub(start), ok)
		}
	}
}

// TestReleaseKeepsItsPlace: a claimed job given back is due again at its
// own time, with the attempt it was claimed for not counted.
func TestReleaseKeepsItsPlace(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	due := clk.Now().Add(40 * time.Millisecond)
	enqueue(t, s, "o1", due)
	cs := claimAll(t, s, 50*time.Millisecond)
	if len(cs) != 1 {
		t.Fatalf("claimed %v", claimedIDs(cs))
	}
	if err := s.Release(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if j := getJob(t, s, "o1"); j.State != kairos.StateScheduled || j.Attempts != 0 || !j.NextRunAt.Equal(due) {
		t.Fatalf("released: %s attempts %d next %v", j.State, j.Attempts, j.NextRunAt)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 1})
	if err := s.Release(ctx, cs); err != nil { // twice: the claim is no longer current, nothing changes
		t.Fatal(err)
	}
	clk.Add(40 * time.Millisecond)
	if c := claimOne(t, s, "o1"); c.Job.Attempts != 1 || !c.Due.Equal(due) {
		t.Fatalf("claimed again: attempt %d due %v", c.Job.Attempts, c.Due)
	}
}

// TestAttemptLogKeepsTheLastTen: a job retried a dozen times keeps the
// last ten attempts, oldest first.
func TestAttemptLogKeepsTheLastTen(t *testing.T) {
	s, clk := newStore(t, Options{})
	enqueue(t, s, "o1", clk.Now())
	for n := 1; n <= 12; n++ {
		c := claimOne(t, s, "o1")
		if c.Job.Attempts != n {
			t.Fatalf("attempt %d, want %d", c.Job.Attempts, n)
		}
		st, err := s.Finish(context.Background(), c.Job.JobKey, kairos.Attempt{N: n, At: clk.Now(), Status: 500,
			Error: "line one\nline two \"quoted\"", Response: strings.Repeat("r", 300)}, outcomeOf(false, n == 12), clk.Now().Add(time.Second))
		if err != nil || st == "" {
			t.Fatalf("finish %d: %v %v", n, st, err)
		}
		clk.Add(time.Second)
	}
	j := getJob(t, s, "o1")
	if j.State != kairos.StateDead || len(j.Log) != LogKeep || j.Log[0].N != 3 || j.Log[9].N != 12 ||
		j.Log[9].Error != "line one\nline two \"quoted\"" || len(j.Log[9].Response) != 300 {
		t.Fatalf("log: %d entries, first %d, last %+v", len(j.Log), j.Log[0].N, j.Log[len(j.Log)-1])
	}
}

// TestFinishesTogether: outcomes recorded at the same moment share round
// trips, each applied to its own job:
// delivered, retrying, dead, or nothing for an attempt whose claim is no
// longer current.
func TestFinishesTogether(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 2})
	const n = 60
	for i := range n {
		enqueue(t, s, "f"+strconv.Itoa(i), clk.Now())
	}
	cs := claimAll(t, s, 0)
	if len(cs) != n {
		t.Fatalf("claimed %d of %d", len(cs), n)
	}
	want := map[string]kairos.State{}
	var wg sync.WaitGroup
	got := make([]kairos.State, len(cs))
	for i, c := range cs {
		a := kairos.Attempt{N: c.Job.Attempts, At: clk.Now(), Status: 200}
		ok, dead := false, false
		switch i % 4 {
		case 0:
			ok, want[c.Job.ID] = true, kairos.StateDelivered
		case 1:
			want[c.Job.ID] = kairos.StateRetrying
		case 2:
			dead, want[c.Job.ID] = true, kairos.StateDead
		case 3:
			a.N++ // not the attempt it was claimed for: stale
			ok, want[c.Job.ID] = true, kairos.StateActive
		}
		wg.Go(func() {
			st, err := s.Finish(ctx, c.Job.JobKey, a, outcomeOf(ok, dead), clk.Now().Add(time.Minute))
			if err != nil {
				t.Error(err)
			}
			got[i] = st
		})
	}
	wg.Wait()
	for i, c := range cs {
		if answer := want[c.Job.ID]; got[i] != answer && !(answer == kairos.StateActive && got[i] == "") {
			t.Errorf("%s: finish answered %q, want %q (\"\" for a stale attempt)", c.Job.ID, got[i], answer)
		}
	}
	for _, c := range cs {
		if j := getJob(t, s, c.Job.ID); j.State != want[c.Job.ID] {
			t.Errorf("%s: stored %s, want %s", c.Job.ID, j.State, want[c.Job.ID])
		}
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateDelivered: n / 4, kairos.StateRetrying: n / 4,
		kairos.StateDead: n / 4, kairos.StateActive: n / 4})
}

// A dead outcome with a notice files the job's failure notification, due
// at once, in the same claim: once, and not for a stale outcome.
func TestDeadOutcomeFilesItsFailureNotice(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	enqueue(t, s, "o1", clk.Now())
	c := claimOne(t, s, "o1")
	notice := kairos.Notice{URL: "https://hooks.example.com/failed", Body: []byte(`{"type":"job.dead","job_id":"o1"}`)}
	a := kairos.Attempt{N: 1, At: clk.Now(), Status: 500, Error: "callback answered 500"}
	if _, err := s.Finish(ctx, c.Job.JobKey, a, kairos.OutcomeDead, time.Time{}, notice); err != nil {
		t.Fatal(err)
	}
	// the same outcome again (a retried Finish): applied once
	if _, err := s.Finish(ctx, c.Job.JobKey, a, kairos.OutcomeDead, time.Time{}, notice); err != nil {
		t.Fatal(err)
	}
	cs := claimAll(t, s, 0)
	if len(cs) != 1 || cs[0].Job.ID != kairos.NoticeID("o1", 1) {
		t.Fatalf("claimed %v, want the failure notification alone", claimedIDs(cs))
	}
	n := cs[0].Job
	if n.CallbackURL != notice.URL || string(n.Payload) != string(notice.Body) || n.Attempts != 1 {
		t.Fatalf("notification job: url %q payload %s attempts %d", n.CallbackURL, n.Payload, n.Attempts)
	}
	if j := getJob(t, s, "o1"); j.State != kairos.StateDead {
		t.Fatalf("the job is %s", j.State)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateDead: 1, kairos.StateActive: 1})
	// A stale attempt's dead outcome files nothing.
	enqueue(t, s, "o2", clk.Now())
	c2 := claimOne(t, s, "o2")
	stale := kairos.Attempt{N: c2.Job.Attempts + 1, At: clk.Now(), Status: 500}
	if _, err := s.Finish(ctx, c2.Job.JobKey, stale, kairos.OutcomeDead, time.Time{}, notice); err != nil {
		t.Fatal(err)
	}
	if cs := claimAll(t, s, 0); len(cs) != 0 {
		t.Fatalf("a stale dead outcome filed %v", claimedIDs(cs))
	}
}

// TestLargeSlotsTakeSeveralCalls: 12,000 jobs due at one instant, filed
// in a wide wheel slot, go through their whole life with claims of the
// largest size: the cascade, the claims, the outcomes, the leases' entries
// and the records' expiry never make one script call that Lua cannot
// make (unpack takes at most about 8,000 values), and each call does a
// bounded share of the work.
func TestLargeSlotsTakeSeveralCalls(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1, Retention: time.Minute})
	const n = 12_000
	due := clk.Now().Add(25 * time.Second) // in a 10 s slot, cascaded when due
	jobs := make([]kairos.Job, n)
	for i := range jobs {
		jobs[i] = kairos.Job{JobKey: key("big-" + strconv.Itoa(i)), RunAt: due, Payload: []byte(`{"n":1}`)}
	}
	for len(jobs) > 0 {
		for _, r := range s.EnqueueBatch(ctx, jobs[:1000]) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		jobs = jobs[1000:]
	}
	clk.Add(25 * time.Second)
	// claim all (each call at most maxClaim), recording each call's
	// outcomes before the next claim
	claimed, calls := 0, 0
	for calls = 1; calls < 100; calls++ {
		c, err := s.ClaimDue(ctx, 0, maxClaim, 0, 5*time.Second)
		if err != nil {
			t.Fatalf("claim %d: %v", calls, err)
		}
		if len(c.Jobs) > maxClaim {
			t.Fatalf("claim %d handed out %d jobs, more than its limit %d", calls, len(c.Jobs), maxClaim)
		}
		claimed += len(c.Jobs)
		sem := make(chan struct{}, 64)
		var wg sync.WaitGroup
		for _, cl := range c.Jobs {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				a := kairos.Attempt{N: cl.Job.Attempts, At: clk.Now(), Status: 204, Duration: time.Millisecond}
				if _, err := s.Finish(ctx, cl.Job.JobKey, a, kairos.OutcomeDelivered, time.Time{}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if len(c.Jobs) == 0 {
			break
		}
	}
	if claimed != n {
		t.Fatalf("claimed %d of %d in %d calls", claimed, n, calls)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateDelivered: n})
	// past the leases (5 s + 10 s + 5 s) nothing is left to do: the
	// outcomes took the leases out
	clk.Add(30 * time.Second)
	if c, err := s.ClaimDue(ctx, 0, maxClaim, 0, 5*time.Second); err != nil || len(c.Jobs) > 0 || (!c.Next.IsZero() && !c.Next.After(clk.Now())) {
		t.Fatalf("after the leases: claimed %d, next %v (now %v), %v", len(c.Jobs), c.Next, clk.Now(), err)
	}
	// then the records go past their retention: in several calls, none failing
	for _, step := range []time.Duration{time.Minute} {
		clk.Add(step)
		for calls = 1; ; calls++ {
			c, err := s.ClaimDue(ctx, 0, maxClaim, 0, 5*time.Second)
			if err != nil {
				t.Fatalf("after %v, claim %d: %v", step, calls, err)
			}
			if len(c.Jobs) > 0 {
				t.Fatalf("claimed %d delivered jobs", len(c.Jobs))
			}
			if c.Next.IsZero() || c.Next.After(clk.Now()) {
				break
			}
			if calls > 100 {
				t.Fatalf("after %v: still due work after %d calls", step, calls)
			}
		}
		if calls < 2 {
			t.Errorf("after %v: %d entries done in one call; want the work bounded per call", step, n)
		}
	}
	if _, err := s.GetJob(ctx, key("big-0")); !errors.Is(err, kairos.ErrNotFound) {
		t.Errorf("a delivered job past its retention: %v, want not found", err)
	}
	if hl := s.c.HLen(ctx, s.k.pool(0)).Val(); hl != 0 {
		t.Errorf("%d records left in the pool past their retention", hl)
	}
}

// TestReleaseManyAcrossShards: a release of more jobs than one call takes,
// spread over every shard, gives back each job once, at the time the
// caller set; jobs whose claim is no longer current in the same release
// are left alone.
func TestReleaseManyAcrossShards(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	n := 2*releaseBatch + 100
	for i := range n {
		enqueue(t, s, fmt.Sprintf("r%d", i), clk.Now())
	}
	cs := claimAll(t, s, 50*time.Millisecond)
	if len(cs) != n {
		t.Fatalf("claimed %d, want %d", len(cs), n)
	}
	later := clk.Now().Add(time.Second)
	for i := range cs {
		if i%2 == 0 {
			cs[i].Due = later
		}
	}
	if err := s.Release(ctx, cs[:10]); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, cs); err != nil { // the first 10 again: no longer claimed
		t.Fatal(err)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: int64(n / 2), kairos.StateReady: int64(n / 2)})
	for _, i := range []int{0, 1, 10, 11, n - 2, n - 1} {
		want, st := clk.Now(), kairos.StateReady // due now
		if i%2 == 0 {
			want, st = later, kairos.StateScheduled
		}
		if j := getJob(t, s, cs[i].Job.ID); j.State != st || j.Attempts != 0 || !j.NextRunAt.Equal(want) {
			t.Errorf("%s released: %s attempts %d next %v, want %s at %v", cs[i].Job.ID, j.State, j.Attempts, j.NextRunAt, st, want)
		}
	}
	if again := claimAll(t, s, 50*time.Millisecond); len(again) != n/2 {
		t.Fatalf("claimed %d again now, want the %d released to now", len(again), n/2)
	}
}

// TestRescheduleKeepsAttempts: moving a job keeps its attempts. A retrying
// job moved stays retrying and its next attempt goes on from the last;
// a replayed job moved keeps its fresh set of attempts, no more.
func TestRescheduleKeepsAttempts(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	enqueue(t, s, "o1", clk.Now())
	c := claimOne(t, s, "o1")
	finishJob(t, s, c.Job, clk.Now(), 500, false, false, clk.Now().Add(2*time.Second))
	moved, err := s.Reschedule(ctx, key("o1"), clk.Now().Add(10*time.Second))
	if err != nil || moved.State != kairos.StateRetrying || moved.Attempts != 1 || !moved.NextRunAt.Equal(clk.Now().Add(10*time.Second)) {
		t.Fatalf("retrying job moved: %+v %v", moved, err)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateRetrying: 1})
	clk.Add(10 * time.Second)
	c = claimOne(t, s, "o1")
	if c.Job.Attempts != 2 || c.Job.AttemptsLeft() != c.Job.MaxAttempts-2 {
		t.Fatalf("attempt after the move: %d, %d left of %d", c.Job.Attempts, c.Job.AttemptsLeft(), c.Job.MaxAttempts)
	}
	finishJob(t, s, c.Job, clk.Now(), 500, false, true, time.Time{})
	if _, err := s.Replay(ctx, key("o1")); err != nil {
		t.Fatal(err)
	}
	moved, err = s.Reschedule(ctx, key("o1"), clk.Now().Add(5*time.Second))
	if err != nil || moved.State != kairos.StateScheduled || moved.Attempts != 2 || moved.ReplayedAfter != 2 {
		t.Fatalf("replayed job moved: %+v %v", moved, err)
	}
	clk.Add(5 * time.Second)
	c = claimOne(t, s, "o1")
	if c.Job.Attempts != 3 || c.Job.AttemptsLeft() != c.Job.MaxAttempts-1 {
		t.Fatalf("first attempt of the replayed job after the move: %d, %d left of %d", c.Job.Attempts, c.Job.AttemptsLeft(), c.Job.MaxAttempts)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateActive: 1})
}

// TestFinishRecordsAtOnce: an outcome is recorded by Finish itself, and a
// delivered job leaves nothing for a claim to do: no lease entry, and a
// wheel entry only at its record's expiry.
func TestFinishRecordsAtOnce(t *testing.T) {
	s, clk := newStore(t, Options{})
	ctx := context.Background()
	j := enqueue(t, s, "a", clk.Now())
	c := claimOne(t, s, "a")
	sh := s.k.shardOf(j.JobKey)
	if n, err := s.c.ZCard(ctx, s.k.leases(sh)).Result(); err != nil || n != 1 {
		t.Fatalf("leases while active: %d %v, want 1", n, err)
	}
	st, err := s.Finish(ctx, j.JobKey, kairos.Attempt{N: c.Job.Attempts, At: clk.Now(), Status: 200}, kairos.OutcomeDelivered, time.Time{})
	if err != nil || st != kairos.StateDelivered {
		t.Fatalf("finish: %q %v", st, err)
	}
	if got := getJob(t, s, "a"); got.State != kairos.StateDelivered {
		t.Errorf("state %s right after Finish, want delivered", got.State)
	}
	if n, err := s.c.ZCard(ctx, s.k.leases(sh)).Result(); err != nil || n != 0 {
		t.Errorf("leases after the outcome: %d %v, want 0", n, err)
	}
	p, err := s.Claim(ctx, sh, 100, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Next.After(clk.Now().Add(time.Hour)) {
		t.Errorf("the shard's next work is at %v, within the hour after the delivery (%v)", p.Next, clk.Now())
	}
	// a second outcome of the same attempt is stale
	if st, err := s.Finish(ctx, j.JobKey, kairos.Attempt{N: c.Job.Attempts, At: clk.Now(), Status: 500}, kairos.OutcomeDead, time.Time{}); err != nil || st != "" {
		t.Errorf("a second outcome of one attempt: %q %v, want stale", st, err)
	}
}

// TestLapsedLeaseIsClaimedAgain: a job whose worker never reports is
// handed out again once its lease lapses, with the lost attempt logged.
func TestLapsedLeaseIsClaimedAgain(t *testing.T) {
	s, clk := newStore(t, Options{})
	enqueue(t, s, "a", clk.Now())
	c := claimOne(t, s, "a")
	if got := claimAll(t, s, 0); len(got) != 0 {
		t.Fatalf("claimed %v again while its lease holds", claimedIDs(got))
	}
	clk.Add(time.Minute) // past any lease: the claims here give 5 s plus the margin
	again := claimOne(t, s, "a")
	if again.Job.Attempts != c.Job.Attempts+1 {
		t.Fatalf("attempt %d after the lapse, want %d", again.Job.Attempts, c.Job.Attempts+1)
	}
	j := getJob(t, s, "a")
	if len(j.Log) != 1 || !strings.Contains(j.Log[0].Error, "lease expired") {
		t.Errorf("log after a lapsed lease: %+v", j.Log)
	}
	// the first worker's late outcome changes nothing
	if st, err := s.Finish(context.Background(), j.JobKey, kairos.Attempt{N: c.Job.Attempts, At: clk.Now(), Status: 200}, kairos.OutcomeDelivered, time.Time{}); err != nil || st != "" {
		t.Errorf("stale outcome: %q %v", st, err)
	}
}

// TestCancelledJobIsKeptForTheRetention: a cancelled job stays readable
// as cancelled, its attempt log and labels kept, for the retention period,
// and is listed by state and label; it is counted (cumulative, as
// delivered jobs are) and leaves the tenant's pending jobs and the dead
// letters. A second cancel changes nothing; a reschedule or a replay is a
// conflict; its id takes a new job. Its record's expiry, in the wheel,
// deletes it with its index entries: nothing sweeps.
func TestCancelledJobIsKeptForTheRetention(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1, Retention: time.Minute})
	labels := map[string]string{"campaign": "bf"}
	for _, id := range []string{"tried", "dead", "kept"} {
		if _, err := s.Enqueue(ctx, kairos.Job{JobKey: key(id), RunAt: clk.Now(), Labels: labels, Payload: []byte(`1`)}); err != nil {
			t.Fatal(err)
		}
	}
	// tried fails once (retrying, with an attempt logged); dead dies.
	for _, c := range claimAll(t, s, 0) {
		switch c.Job.ID {
		case "tried":
			finishJob(t, s, c.Job, clk.Now(), 500, false, false, clk.Now().Add(time.Hour))
		case "dead":
			finishJob(t, s, c.Job, clk.Now(), 500, false, true, time.Time{})
		case "kept":
			finishJob(t, s, c.Job, clk.Now(), 500, false, false, clk.Now().Add(time.Hour))
		}
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateRetrying: 2, kairos.StateDead: 1})
	clk.Add(time.Second)
	for _, id := range []string{"tried", "dead"} {
		if err := s.Cancel(ctx, key(id)); err != nil {
			t.Fatalf("cancel %s: %v", id, err)
		}
	}
	if err := s.Cancel(ctx, key("tried")); err != nil {
		t.Fatalf("cancel twice: %v, want nothing changed", err)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateRetrying: 1, kairos.StateCancelled: 2})
	if n, err := s.TenantPending(ctx, "acme"); err != nil || n != 1 {
		t.Errorf("tenant pending %d, %v; want 1 (kept, still retrying)", n, err)
	}
	if dead, err := s.ListDead(ctx, DeadQuery{Tenant: "acme", Limit: 10}); err != nil || len(dead.Jobs) != 0 {
		t.Errorf("dead letters after the cancel: %+v, %v", dead.Jobs, err)
	}
	j := getJob(t, s, "tried")
	if j.State != kairos.StateCancelled || j.Attempts != 1 || len(j.Log) != 1 || j.Log[0].Status != 500 ||
		!j.DoneAt.Equal(clk.Now()) || j.Labels["campaign"] != "bf" || !j.NextRunAt.IsZero() {
		t.Fatalf("cancelled job reads %+v; want cancelled, its attempt, its labels, done at the cancel", j)
	}
	listed := func(q ListQuery) []string {
		t.Helper()
		q.Tenant, q.Topic, q.Limit = "acme", "orders", 50
		p, err := s.ListJobs(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, j := range p.Jobs {
			ids = append(ids, j.ID)
		}
		slices.Sort(ids)
		return ids
	}
	if got := listed(ListQuery{State: kairos.StateCancelled}); !slices.Equal(got, []string{"dead", "tried"}) {
		t.Errorf("listed as cancelled: %v", got)
	}
	if got := listed(ListQuery{State: kairos.StateCancelled, Labels: labels}); !slices.Equal(got, []string{"dead", "tried"}) {
		t.Errorf("listed as cancelled by label: %v", got)
	}
	if _, err := s.Reschedule(ctx, key("tried"), clk.Now().Add(time.Hour)); !errors.Is(err, kairos.ErrConflict) {
		t.Errorf("reschedule a cancelled job: %v, want a conflict", err)
	}
	if _, err := s.Replay(ctx, key("tried")); !errors.Is(err, kairos.ErrConflict) {
		t.Errorf("replay a cancelled job: %v, want a conflict", err)
	}
	if _, err := s.Enqueue(ctx, kairos.Job{JobKey: key("dead"), RunAt: clk.Now().Add(time.Hour)}); err != nil {
		t.Fatalf("a new job of a cancelled one's id: %v", err)
	}
	if j := getJob(t, s, "dead"); j.State != kairos.StateScheduled || j.Attempts != 0 {
		t.Fatalf("the new job of that id reads %+v", j)
	}
	// Nothing of the cancelled one fires; past the retention it is gone.
	clk.Add(time.Minute + 2*time.Second)
	if cs := claimAll(t, s, 0); len(cs) != 0 {
		t.Fatalf("claimed %v", claimedIDs(cs))
	}
	if _, err := s.GetJob(ctx, key("tried")); !errors.Is(err, kairos.ErrNotFound) {
		t.Errorf("past its retention the cancelled job reads %v, want not found", err)
	}
	if got := listed(ListQuery{Labels: labels}); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("listed by label past the retention: %v, want kept alone", got)
	}
	if got := listed(ListQuery{}); !slices.Equal(got, []string{"dead", "kept"}) {
		t.Errorf("listed past the retention: %v", got)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateRetrying: 1, kairos.StateCancelled: 2, kairos.StateScheduled: 1})
}
