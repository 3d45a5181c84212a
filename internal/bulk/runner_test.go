package bulk

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
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
	op, _, err := s.CreateOperation(ctx, rdb.Operation{ID: rdb.NewOperationID(), Tenant: "acme", Topic: "t", Action: rdb.ActionCancel,
		Filter: rdb.BulkFilter{Labels: map[string]string{"wave": "1"}}}, "dead-runner", lease)
	if err != nil {
		t.Fatal(err)
	}
	step, err := s.BulkBatch(ctx, op, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := s.RecordStep(ctx, "acme", op.ID, "dead-runner", lease, step); !ok || err != nil {
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
	if got := waitDone(t, s, op.ID, 20*time.Second); got.Done != 1200 || got.Matched != 1200 || got.Owner != r.owner {
		t.Errorf("finished %+v, want 1200 done by the second runner", got)
	}
	if ok, _, err := s.RecordStep(ctx, "acme", op.ID, "dead-runner", lease, rdb.Step{Done: 5}); ok || err != nil {
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
	if got := waitDone(t, s, op.ID, 20*time.Second); got.Done != 3 || got.Failed != 2 {
		t.Fatalf("operation %+v, want 3 replayed and 2 refused by max_pending 3", got)
	}
	if p, err := s.TenantPending(ctx, "acme"); err != nil || p != 3 {
		t.Fatalf("pending %d (%v), want 3", p, err)
	}
}

// watched is a Store that tracks, per tenant, the operations between their
// first batch and the step that finishes them, and the most of them seen
// at once.
type watched struct {
	*rdb.Store
	mu      sync.Mutex
	walking map[string]map[string]bool // tenant -> operations
	most    map[string]int
}

func (w *watched) BulkBatch(ctx context.Context, op rdb.Operation, cursor string, n int) (rdb.Step, error) {
	w.mu.Lock()
	if w.walking[op.Tenant] == nil {
		w.walking[op.Tenant] = map[string]bool{}
	}
	w.walking[op.Tenant][op.ID] = true
	w.most[op.Tenant] = max(w.most[op.Tenant], len(w.walking[op.Tenant]))
	w.mu.Unlock()
	return w.Store.BulkBatch(ctx, op, cursor, n)
}

func (w *watched) RecordStep(ctx context.Context, tenant, id, owner string, lease time.Duration, step rdb.Step) (bool, []string, error) {
	held, started, err := w.Store.RecordStep(ctx, tenant, id, owner, lease, step)
	if held && step.Finished {
		w.mu.Lock()
		delete(w.walking[tenant], id)
		w.mu.Unlock()
	}
	return held, started, err
}

// TestTenantRunsTwoOperationsAtOnce: of five operations a tenant starts
// at once, two run and three wait, queued; each starts as one ends, and
// all end done, never more than two walking at once. Another tenant's
// operation does not wait behind them.
func TestTenantRunsTwoOperationsAtOnce(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const waves, perWave = 5, 120
	var jobs []kairos.Job
	for w := range waves {
		for i := range perWave {
			jobs = append(jobs, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: fmt.Sprintf("w%d-%03d", w, i)},
				RunAt: s.Now().Add(time.Hour), Labels: map[string]string{"wave": fmt.Sprint(w)}})
		}
	}
	jobs = append(jobs, kairos.Job{JobKey: kairos.JobKey{Tenant: "globex", Topic: "t", ID: "g"}, RunAt: s.Now().Add(time.Hour),
		Labels: map[string]string{"wave": "0"}})
	for _, r := range s.EnqueueBatch(ctx, jobs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	w := &watched{Store: s, walking: map[string]map[string]bool{}, most: map[string]int{}}
	r := New(w, Config{Batch: 40, Pause: 5 * time.Millisecond, Lease: 5 * time.Second})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()

	cancel := func(tenant string, wave int) rdb.Operation {
		t.Helper()
		op, err := r.Create(ctx, rdb.Operation{ID: rdb.NewOperationID(), Tenant: tenant, Topic: "t", Action: rdb.ActionCancel,
			Filter: rdb.BulkFilter{Labels: map[string]string{"wave": fmt.Sprint(wave)}}})
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	var ops []rdb.Operation
	var states []string
	for wave := range waves {
		op := cancel("acme", wave)
		ops = append(ops, op)
		states = append(states, op.State)
	}
	if want := []string{rdb.OpRunning, rdb.OpRunning, rdb.OpQueued, rdb.OpQueued, rdb.OpQueued}; fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("five operations created at once: states %v, want %v", states, want)
	}
	if got, err := s.GetOperation(ctx, ops[4].ID); err != nil || got.State != rdb.OpQueued || !got.LeaseUntil.IsZero() {
		t.Errorf("the fifth operation reads %+v (%v), want queued, with no lease", got, err)
	}
	if other := cancel("globex", 0); other.State != rdb.OpRunning {
		t.Errorf("another tenant's operation is %s, want running at once", other.State)
	}
	for _, op := range ops {
		if got := waitDone(t, s, op.ID, 30*time.Second); got.Done != perWave {
			t.Errorf("operation %s done with %d cancelled, want %d", op.ID, got.Done, perWave)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.most["acme"] != rdb.TenantRunningOps {
		t.Errorf("at most %d of the tenant's operations walked at once, want %d", w.most["acme"], rdb.TenantRunningOps)
	}
	// the slots are free again: a new operation runs at once
	if op := cancel("acme", 0); op.State != rdb.OpRunning {
		t.Errorf("an operation after the others ended is %s, want running", op.State)
	}
}

// waitDone waits until operation id is done, and returns it.
func waitDone(t *testing.T, s *rdb.Store, id string, within time.Duration) rdb.Operation {
	t.Helper()
	var got rdb.Operation
	testwait.UntilNil(t, within, func() (err error) {
		if got, err = s.GetOperation(context.Background(), id); err == nil && got.State != rdb.OpDone {
			err = fmt.Errorf("%+v", got)
		}
		return err
	}, "operation "+id+" done")
	return got
}
