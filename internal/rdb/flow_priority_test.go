package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// prioJob is job id of topic tp due at due with priority p.
func prioJob(tp kairos.Topic, id string, due time.Time, p int) kairos.Job {
	return kairos.Job{JobKey: kairos.JobKey{Tenant: tp.Tenant, Topic: tp.Name, ID: id}, Attempts: 1, RunAt: due, Priority: p}
}

// Under a parallelism limit the permits go in held order across
// processes: a job refused a permit waits for it, and a permit freed goes
// to no job behind it, whichever process asks first; the waiting job's
// process gets it when it asks again. Equal priority goes in due order.
func TestGatePermitsInHeldOrderAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	tp := kairos.Topic{Tenant: "acme", Name: "lambda", Parallelism: 1}
	due := clk.Now()
	first := prioJob(tp, "first", due, 0)
	a0 := prioJob(tp, "a0", due, 0)                       // held by process A
	b9 := prioJob(tp, "b9", due.Add(time.Millisecond), 9) // held by process B
	b0 := prioJob(tp, "b0", due.Add(time.Millisecond), 0) // B's next, due after a0
	if rs := gates(t, s, tp, []kairos.Job{first}); rs[0].Gate != GateGo {
		t.Fatalf("first: %+v", rs)
	}
	for _, j := range []kairos.Job{a0, b9} {
		if rs := gates(t, s, tp, []kairos.Job{j}); rs[0].Gate != GateFull {
			t.Fatalf("%s while the permit is taken: %+v", j.ID, rs)
		}
	}
	if err := s.Done(ctx, tp, first); err != nil {
		t.Fatal(err)
	}
	// A asks first: b9 (waiting, in B) is ahead of a0, so the permit waits for it
	if rs := gates(t, s, tp, []kairos.Job{a0}); rs[0].Gate != GateFull {
		t.Fatalf("a0 with b9 waiting: %+v, want GateFull", rs)
	}
	if rs := gates(t, s, tp, []kairos.Job{b9}); rs[0].Gate != GateGo {
		t.Fatalf("b9: %+v, want GateGo", rs)
	}
	if rs := gates(t, s, tp, []kairos.Job{b0}); rs[0].Gate != GateFull {
		t.Fatalf("b0 while b9 holds the permit: %+v", rs)
	}
	if err := s.Done(ctx, tp, b9); err != nil {
		t.Fatal(err)
	}
	// equal priority: b0, due after a0, waits for it
	if rs := gates(t, s, tp, []kairos.Job{b0}); rs[0].Gate != GateFull {
		t.Fatalf("b0 with a0 waiting: %+v, want GateFull", rs)
	}
	if rs := gates(t, s, tp, []kairos.Job{a0}); rs[0].Gate != GateGo {
		t.Fatalf("a0: %+v, want GateGo", rs)
	}
	if err := s.Done(ctx, tp, a0); err != nil {
		t.Fatal(err)
	}
	if rs := gates(t, s, tp, []kairos.Job{b0}); rs[0].Gate != GateGo {
		t.Fatalf("b0 last: %+v, want GateGo", rs)
	}
	if err := s.Done(ctx, tp, b0); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{keyFlowWait, keyFlowWaitLapse} {
		if n, err := s.c.Exists(ctx, s.k.flow(tp.Tenant, tp.Flow())+k).Result(); err != nil || n != 0 {
			t.Errorf("%s left behind (%d, %v): every waiting job got its permit", k, n, err)
		}
	}
}

// A job waiting for a permit whose process died (nobody asks about it
// again) holds the flow back for WaitLapse at most; jobs asked about
// together in one call go in order.
func TestGateWaiterLapses(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	tp := kairos.Topic{Tenant: "acme", Name: "lambda", Parallelism: 2}
	due := clk.Now()
	x, y := prioJob(tp, "x", due, 0), prioJob(tp, "y", due, 0)
	dead := prioJob(tp, "dead", due, 9)
	live := prioJob(tp, "live", due, 0)
	if rs := gates(t, s, tp, []kairos.Job{x, y}); rs[0].Gate != GateGo || rs[1].Gate != GateGo {
		t.Fatalf("x, y: %+v", rs)
	}
	if rs := gates(t, s, tp, []kairos.Job{dead}); rs[0].Gate != GateFull {
		t.Fatalf("dead: %+v", rs)
	}
	if err := s.Done(ctx, tp, x); err != nil {
		t.Fatal(err)
	}
	if rs := gates(t, s, tp, []kairos.Job{live}); rs[0].Gate != GateFull {
		t.Fatalf("live behind a waiting job of priority 9: %+v, want GateFull", rs)
	}
	clk.Add(WaitLapse + time.Millisecond) // dead's process never asks again
	if rs := gates(t, s, tp, []kairos.Job{live}); rs[0].Gate != GateGo {
		t.Fatalf("live after dead's wait lapsed: %+v, want GateGo", rs)
	}
}

// A job refused a free permit, kept for a job waiting ahead of it, says
// so on the wake channel, so that the process holding that job asks again
// at once; a job refused because every permit is taken does not.
func TestGateSaysWhenAPermitIsKept(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, clk := newStore(t, Options{})
	wakes := s.SubscribeWake(ctx)
	if w := <-wakes; !w.Resubscribed {
		t.Fatalf("first wake %+v", w)
	}
	tp := kairos.Topic{Tenant: "acme", Name: "lambda", Parallelism: 1, FlowKey: "partner"}
	due := clk.Now()
	x, ahead, behind := prioJob(tp, "x", due, 0), prioJob(tp, "ahead", due, 9), prioJob(tp, "behind", due, 0)
	gates(t, s, tp, []kairos.Job{x})
	gates(t, s, tp, []kairos.Job{ahead}) // refused: every permit taken
	if err := s.Done(ctx, tp, x); err != nil {
		t.Fatal(err)
	}
	if rs := gates(t, s, tp, []kairos.Job{behind}); rs[0].Gate != GateFull {
		t.Fatalf("behind: %+v", rs)
	}
	select {
	case w := <-wakes:
		if want := "acme/" + tp.Flow(); w.Flow != want {
			t.Fatalf("wake %+v, want Flow %s", w, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no wake for the permit kept")
	}
	select {
	case w := <-wakes:
		t.Fatalf("another wake %+v", w)
	case <-time.After(100 * time.Millisecond):
	}
}
