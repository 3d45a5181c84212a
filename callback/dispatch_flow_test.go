package callback

import (
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// A flow's jobs refused a permit come back together (one timer), and a
// permit another process keeps for a job waiting ahead (flowFreed) brings
// them back at once, unless they were refused within freedQuiet.
func TestFlowFreedWakesWaitingJobs(t *testing.T) {
	tp := kairos.Topic{Tenant: "acme", Name: "lambda", Parallelism: 1}
	d := newDispatcher(newFakeStore(tp), dispatchConfig{})
	job := func(id string) kairos.Claimed {
		return kairos.Claimed{Job: kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "lambda", ID: id}, Attempts: 1}, Due: time.Now()}
	}
	f := flowKey("acme", tp.Flow())
	start := time.Now()
	d.requeueFull(f, []kairos.Claimed{job("a")})
	d.requeueFull(f, []kairos.Claimed{job("b")})
	d.mu.Lock()
	timers := len(d.timers)
	d.mu.Unlock()
	if timers != 1 {
		t.Fatalf("%d timers, want the flow's jobs under one", timers)
	}
	d.flowFreed(f) // refused just now: not the job the permit is kept for
	if n := d.waiting("acme", "lambda"); n != 0 && time.Since(start) < fullRetry {
		t.Fatalf("%d ready within freedQuiet, want 0", n)
	}
	d.mu.Lock()
	d.full[f].refused = time.Now().Add(-time.Second)
	d.mu.Unlock()
	d.flowFreed(f)
	if n := d.waiting("acme", "lambda"); n != 2 {
		t.Fatalf("%d ready after flowFreed, want 2 at once", n)
	}
}
