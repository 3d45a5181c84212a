package callback

import (
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// newFlow returns a flow client over a fake store of topic tp, whose
// refused jobs wait in a holder of their own.
func newFlow(tp kairos.Topic) (*flowClient, *holder, *fakeStore) {
	st := newFakeStore(tp)
	h := newHolder(st, holdConfig{})
	return newFlowClient(st, h, nil), h, st
}

// claimed is job id of tp, in attempt 1, due at due.
func claimed(tp kairos.Topic, id string, due time.Time) kairos.Claimed {
	return kairos.Claimed{Job: kairos.Job{JobKey: kairos.JobKey{Tenant: tp.Tenant, Topic: tp.Name, ID: id}, Attempts: 1, MaxAttempts: 3}, Due: due}
}

// A flow's jobs refused a permit come back together (one timer), and a
// permit another process keeps for a job waiting ahead (flowFreed) brings
// them back at once, unless they were refused within freedQuiet.
func TestFlowFreedWakesWaitingJobs(t *testing.T) {
	tp := kairos.Topic{Tenant: "acme", Name: "lambda", Parallelism: 1}
	fc, h, _ := newFlow(tp)
	f := flowKey("acme", tp.Flow())
	start := time.Now()
	fc.waitFull(f, []kairos.Claimed{claimed(tp, "a", start)})
	fc.waitFull(f, []kairos.Claimed{claimed(tp, "b", start)})
	h.mu.Lock()
	timers := len(h.timers)
	h.mu.Unlock()
	if timers != 1 {
		t.Fatalf("%d timers, want the flow's jobs under one", timers)
	}
	fc.flowFreed(f) // refused just now: not the job the permit is kept for
	if n := h.waiting("acme", "lambda"); n != 0 && time.Since(start) < fullRetry {
		t.Fatalf("%d ready within freedQuiet, want 0", n)
	}
	fc.mu.Lock()
	fc.full[f].refused = time.Now().Add(-time.Second)
	fc.mu.Unlock()
	fc.flowFreed(f)
	if n := h.waiting("acme", "lambda"); n != 2 {
		t.Fatalf("%d ready after flowFreed, want 2 at once", n)
	}
}
