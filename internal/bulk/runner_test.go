package bulk

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
)

func TestMain(m *testing.M) { os.Exit(testredis.Main(m)) }

func newStore(t *testing.T) *rdb.Store {
	t.Helper()
	s := rdb.New(testredis.Client(t), rdb.Options{Prefix: testredis.Prefix(t)})
	if err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// An operation whose runner stopped (its lease lapsed) is taken over by
// another runner looking for orphans, which finishes it from where it
// stood; the first runner's late batch is then refused.
func TestOrphanTakenOverAndFenced(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var jobs []kairos.Job
	for i := range 1200 {
		jobs = append(jobs, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: fmt.Sprintf("j%04d", i)},
			RunAt: s.Now().Add(time.Hour), Labels: map[string]string{"wave": "1"}})
	}
	for _, r := range s.EnqueueBatch(ctx, jobs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	// a runner that created the operation, did one batch and died
	const lease = 300 * time.Millisecond
	op, err := s.CreateOperation(ctx, rdb.Operation{ID: rdb.NewOperationID(), Tenant: "acme", Topic: "t", Action: rdb.ActionCancel,
		Filter: rdb.BulkFilter{Labels: map[string]string{"wave": "1"}}}, "dead-runner", lease)
	if err != nil {
		t.Fatal(err)
	}
	step, err := s.BulkBatch(ctx, op, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RecordStep(ctx, op.ID, "dead-runner", lease, step); !ok || err != nil {
		t.Fatalf("the owner's first batch: %t %v", ok, err)
	}
	if ids, _ := s.OrphanedOperations(ctx, 10); len(ids) != 0 {
		t.Fatalf("orphans %v while the lease holds", ids)
	}

	r := New(s, Config{Poll: 50 * time.Millisecond, Lease: lease, Batch: 200})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := s.GetOperation(ctx, op.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == rdb.OpDone {
			if got.Done != 1200 || got.Matched != 1200 || got.Owner != r.owner {
				t.Errorf("finished %+v, want 1200 done by the second runner", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("operation %+v not done", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ok, err := s.RecordStep(ctx, op.ID, "dead-runner", lease, rdb.Step{Done: 5}); ok || err != nil {
		t.Errorf("a batch of the runner that lost the operation was recorded: %t %v", ok, err)
	}
	if c, _ := s.Counts(ctx, "acme", "t"); c[kairos.StateScheduled] != 0 {
		t.Errorf("%d jobs left", c[kairos.StateScheduled])
	}
}

// A bulk replay takes its tenant no further than max_pending, as a single
// replay does not: the jobs beyond it stay dead and count as failed.
func TestReplayKeepsToMaxPending(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var jobs []kairos.Job
	for i := range 5 {
		jobs = append(jobs, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: fmt.Sprintf("d%d", i)},
			RunAt: s.Now(), MaxAttempts: 1})
	}
	for _, r := range s.EnqueueBatch(ctx, jobs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	dead := 0
	for deadline := time.Now().Add(10 * time.Second); dead < 5 && time.Now().Before(deadline); {
		for sh := range s.Shards() {
			c, err := s.ClaimDue(ctx, sh, 100, time.Second, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, cl := range c.Jobs {
				a := kairos.Attempt{N: cl.Job.Attempts, At: s.Now(), Status: 410}
				if _, err := s.Finish(ctx, cl.Job.JobKey, a, kairos.OutcomeDead, time.Time{}); err != nil {
					t.Fatal(err)
				}
				dead++
			}
		}
	}
	if dead != 5 {
		t.Fatalf("%d jobs dead, want 5", dead)
	}
	three := int64(3)
	if err := s.PutQuota(ctx, "acme", kairos.QuotaOverride{MaxPending: &three}); err != nil {
		t.Fatal(err)
	}
	r := New(s, Config{Lease: time.Second})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()
	op, err := r.Create(ctx, rdb.Operation{ID: rdb.NewOperationID(), Tenant: "acme", Topic: "t", Action: rdb.ActionReplay,
		Filter: rdb.BulkFilter{State: kairos.StateDead}})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err := s.GetOperation(ctx, op.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == rdb.OpDone {
			if got.Done != 3 || got.Failed != 2 {
				t.Fatalf("operation %+v, want 3 replayed and 2 refused by max_pending 3", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("operation %+v not done", got)
		}
	}
	if p, err := s.TenantPending(ctx, "acme"); err != nil || p != 3 {
		t.Fatalf("pending %d (%v), want 3", p, err)
	}
}
