package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// A bulk replay replays dead and expired jobs, as a single replay does,
// and leaves the others alone; one limited to dead jobs walks only the
// dead letters and so leaves expired jobs alone.
func TestBulkReplayTakesDeadAndExpiredJobs(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	end := func(id string, o kairos.Outcome) {
		enqueue(t, s, id, clk.Now())
		c := claimOne(t, s, id)
		a := kairos.Attempt{N: c.Job.Attempts, At: clk.Now(), Status: 410}
		if _, err := s.Finish(ctx, c.Job.JobKey, a, o, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	t0 := clk.Now()
	end("dead", kairos.OutcomeDead)
	end("expired", kairos.OutcomeExpired)
	clk.Add(time.Second)
	end("dead2", kairos.OutcomeDead)
	enqueue(t, s, "waiting", clk.Now().Add(time.Hour))
	run := func(f BulkFilter) {
		t.Helper()
		op := Operation{ID: NewOperationID(), Tenant: "acme", Topic: "orders", Action: ActionReplay, Filter: f}
		cur := ""
		for range 100 {
			step, err := s.BulkBatch(ctx, op, cur, 10)
			if err != nil {
				t.Fatal(err)
			}
			if step.Finished {
				return
			}
			cur = step.Cursor
		}
		t.Fatal("the walk did not finish")
	}
	run(BulkFilter{State: kairos.StateDead, RunAtTo: t0.Add(500 * time.Millisecond)})
	if st := getJob(t, s, "expired").State; st != kairos.StateExpired {
		t.Fatalf("a replay of dead jobs left the expired job %s", st)
	}
	if st := getJob(t, s, "dead").State; st == kairos.StateDead {
		t.Fatal("a replay of dead jobs left the dead job dead")
	}
	if st := getJob(t, s, "dead2").State; st != kairos.StateDead {
		t.Fatalf("a replay of dead jobs due before t0+500ms made dead2 %s", st)
	}
	run(BulkFilter{RunAtTo: clk.Now().Add(time.Minute)})
	for id, want := range map[string]bool{"expired": true, "dead2": true} {
		if st := getJob(t, s, id).State; (st == kairos.StateDead || st == kairos.StateExpired) == want {
			t.Errorf("after a replay by run_at, %s is %s", id, st)
		}
	}
	if st := getJob(t, s, "waiting").State; st != kairos.StateScheduled {
		t.Errorf("the waiting job is %s", st)
	}
}
