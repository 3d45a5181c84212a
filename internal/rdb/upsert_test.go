package rdb

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// The enqueue script's reply says whether each job was created or replaced
// one of its id that had not fired; a finished job's id makes a new job.
func TestUpsertSaysCreatedOrReplaced(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	job := func(id string, in time.Duration) kairos.Job {
		return kairos.Job{JobKey: key(id), RunAt: clk.Now().Add(in)}
	}
	replaced := func(rs ...BatchResult) []bool {
		t.Helper()
		var out []bool
		for i, r := range rs {
			if r.Err != nil {
				t.Fatalf("item %d: %v", i, r.Err)
			}
			out = append(out, r.Replaced())
		}
		return out
	}
	check := func(what string, want []bool, rs ...BatchResult) {
		t.Helper()
		if d := cmp.Diff(want, replaced(rs...)); d != "" {
			t.Errorf("%s: replaced (-want +got):\n%s", what, d)
		}
	}
	check("a new job", []bool{false}, s.Upsert(ctx, job("a", time.Hour)))
	check("the same id again", []bool{true}, s.Upsert(ctx, job("a", 2*time.Hour)))
	// new, existing, new, and the first one's id again in the same call
	check("a batch", []bool{false, true, false, true},
		s.EnqueueBatch(ctx, []kairos.Job{job("b", time.Hour), job("a", time.Hour), job("c", time.Hour), job("b", time.Minute)})...)
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 3})

	// a job due now is replaced while ready; once it runs it is a conflict,
	// and once it is delivered (or dead) its id makes a new job
	check("due now", []bool{false}, s.Upsert(ctx, job("d", 0)))
	check("ready", []bool{true}, s.Upsert(ctx, job("d", 0)))
	j := claimKey(t, s, key("d"))
	if r := s.Upsert(ctx, job("d", 0)); !errors.Is(r.Err, kairos.ErrConflict) || r.Replaced() {
		t.Fatalf("upsert while active: %+v, want a conflict", r)
	}
	if _, err := s.Finish(ctx, j.JobKey, kairos.Attempt{N: j.Attempts, At: clk.Now(), Status: 500}, kairos.OutcomeDead, time.Time{}); err != nil {
		t.Fatal(err)
	}
	check("over a dead job", []bool{false}, s.Upsert(ctx, job("d", time.Hour)))
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 4})
}

// A due time finer than a millisecond is stored rounded up, by a create
// and a reschedule alike: nothing fires before the instant asked for.
func TestSubMillisecondDueTimeRoundsUp(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	base := clk.Now().Add(time.Hour).Truncate(time.Millisecond)
	asked := base.Add(522490 * time.Nanosecond)
	want := base.Add(time.Millisecond)
	r := s.Upsert(ctx, kairos.Job{JobKey: key("a"), RunAt: asked})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if !r.Job.RunAt.Equal(want) {
		t.Errorf("created with run_at %s: answered %s, want %s", asked.Format(time.RFC3339Nano), r.Job.RunAt.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
	if j, err := s.GetJob(ctx, key("a")); err != nil || !j.RunAt.Equal(want) {
		t.Errorf("stored run_at %s (%v), want %s", j.RunAt.Format(time.RFC3339Nano), err, want.Format(time.RFC3339Nano))
	}
	later := asked.Add(time.Minute)
	j, err := s.Reschedule(ctx, key("a"), later)
	if err != nil {
		t.Fatal(err)
	}
	if w := want.Add(time.Minute); !j.NextRunAt.Equal(w) {
		t.Errorf("rescheduled to %s: next run %s, want %s", later.Format(time.RFC3339Nano), j.NextRunAt.Format(time.RFC3339Nano), w.Format(time.RFC3339Nano))
	}
	// a whole millisecond stays as it is
	r = s.Upsert(ctx, kairos.Job{JobKey: key("b"), RunAt: base})
	if r.Err != nil || !r.Job.RunAt.Equal(base) {
		t.Errorf("whole ms %s: answered %s (%v)", base.Format(time.RFC3339Nano), r.Job.RunAt.Format(time.RFC3339Nano), r.Err)
	}
}
