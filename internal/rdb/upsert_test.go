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
			out = append(out, r.Replaced)
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
	if r := s.Upsert(ctx, job("d", 0)); !errors.Is(r.Err, kairos.ErrConflict) || r.Replaced {
		t.Fatalf("upsert while active: %+v, want a conflict", r)
	}
	if _, err := s.Finish(ctx, j.JobKey, kairos.Attempt{N: j.Attempts, At: clk.Now(), Status: 500}, kairos.OutcomeDead, time.Time{}); err != nil {
		t.Fatal(err)
	}
	check("over a dead job", []bool{false}, s.Upsert(ctx, job("d", time.Hour)))
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 4})
}
