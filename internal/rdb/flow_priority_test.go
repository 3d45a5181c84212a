package rdb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testclock"
)

// prioJob is job id of topic tp due at due with priority p.
func prioJob(tp kairos.Topic, id string, due time.Time, p int) kairos.Job {
	return kairos.Job{JobKey: kairos.JobKey{Tenant: tp.Tenant, Topic: tp.Name, ID: id}, Attempts: 1, RunAt: due, Priority: p}
}

// Under a parallelism limit the permits go in wait order across
// processes: a job refused a permit waits for it, and a permit freed goes
// to no job behind it, whichever process asks first; the waiting job's
// process gets it when it asks again. Equal priority goes in due order.
func TestGatePermitsInWaitOrderAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	tp := kairos.Topic{Tenant: "acme", Name: "lambda", Parallelism: 1}
	due := clk.Now()
	first := prioJob(tp, "first", due, 0)
	a0 := prioJob(tp, "a0", due, 0)                       // held by process A
	b9 := prioJob(tp, "b9", due.Add(time.Millisecond), 9) // held by process B
	b0 := prioJob(tp, "b0", due.Add(time.Millisecond), 0) // B's next, due after a0
	if rs := gates(t, s, tp, []kairos.Job{first}); rs[0].Gate != kairos.GateGo {
		t.Fatalf("first: %+v", rs)
	}
	for _, j := range []kairos.Job{a0, b9} {
		if rs := gates(t, s, tp, []kairos.Job{j}); rs[0].Gate != kairos.GateFull {
			t.Fatalf("%s while the permit is taken: %+v", j.ID, rs)
		}
	}
	if err := s.ReturnPermit(ctx, tp, first); err != nil {
		t.Fatal(err)
	}
	// A asks first: b9 (waiting, in B) is ahead of a0, so the permit waits for it
	if rs := gates(t, s, tp, []kairos.Job{a0}); rs[0].Gate != kairos.GateFull {
		t.Fatalf("a0 with b9 waiting: %+v, want kairos.GateFull", rs)
	}
	if rs := gates(t, s, tp, []kairos.Job{b9}); rs[0].Gate != kairos.GateGo {
		t.Fatalf("b9: %+v, want kairos.GateGo", rs)
	}
	if rs := gates(t, s, tp, []kairos.Job{b0}); rs[0].Gate != kairos.GateFull {
		t.Fatalf("b0 while b9 holds the permit: %+v", rs)
	}
	if err := s.ReturnPermit(ctx, tp, b9); err != nil {
		t.Fatal(err)
	}
	// equal priority: b0, due after a0, waits for it
	if rs := gates(t, s, tp, []kairos.Job{b0}); rs[0].Gate != kairos.GateFull {
		t.Fatalf("b0 with a0 waiting: %+v, want kairos.GateFull", rs)
	}
	if rs := gates(t, s, tp, []kairos.Job{a0}); rs[0].Gate != kairos.GateGo {
		t.Fatalf("a0: %+v, want kairos.GateGo", rs)
	}
	if err := s.ReturnPermit(ctx, tp, a0); err != nil {
		t.Fatal(err)
	}
	if rs := gates(t, s, tp, []kairos.Job{b0}); rs[0].Gate != kairos.GateGo {
		t.Fatalf("b0 last: %+v, want kairos.GateGo", rs)
	}
	if err := s.ReturnPermit(ctx, tp, b0); err != nil {
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
	if rs := gates(t, s, tp, []kairos.Job{x, y}); rs[0].Gate != kairos.GateGo || rs[1].Gate != kairos.GateGo {
		t.Fatalf("x, y: %+v", rs)
	}
	if rs := gates(t, s, tp, []kairos.Job{dead}); rs[0].Gate != kairos.GateFull {
		t.Fatalf("dead: %+v", rs)
	}
	if err := s.ReturnPermit(ctx, tp, x); err != nil {
		t.Fatal(err)
	}
	if rs := gates(t, s, tp, []kairos.Job{live}); rs[0].Gate != kairos.GateFull {
		t.Fatalf("live behind a waiting job of priority 9: %+v, want kairos.GateFull", rs)
	}
	clk.Add(WaitLapse + time.Millisecond) // dead's process never asks again
	if rs := gates(t, s, tp, []kairos.Job{live}); rs[0].Gate != kairos.GateGo {
		t.Fatalf("live after dead's wait lapsed: %+v, want kairos.GateGo", rs)
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
	if err := s.ReturnPermit(ctx, tp, x); err != nil {
		t.Fatal(err)
	}
	if rs := gates(t, s, tp, []kairos.Job{behind}); rs[0].Gate != kairos.GateFull {
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

// rateRun is how a flow's jobs went in simRate: in the order they went,
// and when.
type rateRun struct {
	ids  []string
	at   []time.Time
	asks int // jobs asked about, in all
}

// simRate plays two processes over one flow of rate 10 a second: jobs due
// together at t0 (as a resume releases them), split between the
// processes, each of which asks about the jobs it holds in its own held
// order whenever one's time comes, the processes taking turns to ask
// first. Ahead, they ask Pace a few milliseconds before a job's time (as
// a claim does); otherwise Gate at it. A job told to wait comes back at
// its time.
func simRate(t *testing.T, s *Store, clk *testclock.Clock, tp kairos.Topic, jobs []kairos.Job, ahead bool) rateRun {
	t.Helper()
	const lead = 5 * time.Millisecond
	told := map[string]time.Time{}
	byID := map[string]kairos.Job{}
	proc := map[string]int{}
	for i, j := range jobs {
		told[j.ID], byID[j.ID], proc[j.ID] = j.RunAt, j, i%2
	}
	var run rateRun
	for step := 0; len(told) > 0; step++ {
		if step > 50*len(jobs) {
			t.Fatalf("still %d jobs waiting after %d steps", len(told), step)
		}
		next := time.Time{}
		for _, at := range told {
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
		if ahead {
			next = next.Add(-lead)
		}
		if next.After(clk.Now()) {
			clk.Set(next)
		}
		for k := range 2 {
			p := (step + k) % 2
			var mine []kairos.Job
			for id, at := range told {
				if proc[id] == p && (!at.After(clk.Now()) || ahead && !at.After(clk.Now().Add(lead))) {
					mine = append(mine, byID[id])
				}
			}
			if len(mine) == 0 {
				continue
			}
			order := waitOrders(mine)
			idx := make([]int, len(mine))
			for i := range idx {
				idx[i] = i
			}
			slices.SortFunc(idx, func(a, b int) int { return order[a].Compare(order[b]) })
			js, os, dues := make([]kairos.Job, len(mine)), make([]time.Time, len(mine)), make([]time.Time, len(mine))
			for k, i := range idx {
				js[k], os[k], dues[k] = mine[i], order[i], told[mine[i].ID]
			}
			run.asks += len(js)
			var rs []kairos.GateResult
			var err error
			if ahead {
				rs, err = s.Pace(context.Background(), tp, tp.Flow(), js, dues, os, 100*time.Millisecond)
			} else {
				rs, err = s.Gate(context.Background(), tp, tp.Flow(), js, os, 10*time.Second)
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, r := range rs {
				id := js[k].ID
				switch r.Gate {
				case kairos.GateGo:
					at := clk.Now()
					if ahead {
						at = r.At
					}
					run.ids, run.at = append(run.ids, id), append(run.at, at)
					delete(told, id)
				case kairos.GateWait:
					told[id] = r.At
				default:
					t.Fatalf("job %s: %+v", id, r)
				}
			}
		}
	}
	// in the order they start
	idx := make([]int, len(run.ids))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return run.at[a].Compare(run.at[b]) })
	sorted := rateRun{asks: run.asks}
	for _, i := range idx {
		sorted.ids, sorted.at = append(sorted.ids, run.ids[i]), append(sorted.at, run.at[i])
	}
	return sorted
}

// Under a rate limit the times go in wait order across processes: jobs
// due together, kept waiting by the rate and split over two processes that
// each ask about their own, start in priority order (equal priority in
// due order), whichever process asks first, asked now (Gate) or ahead as
// they are claimed (Pace); the first may be any job (it found the time
// free before the others were asked about). The rate is kept: no two
// starts closer than its interval, and no time left idle (the last starts
// within two intervals of the twentieth time), at about one extra ask a
// job.
func TestRateTimesInWaitOrderAcrossProcesses(t *testing.T) {
	for _, ahead := range []bool{false, true} {
		t.Run(map[bool]string{false: "gate", true: "pace"}[ahead], func(t *testing.T) {
			s, clk := newStore(t, Options{})
			tp := kairos.Topic{Tenant: "acme", Name: "partner", RateLimit: 10, RatePeriod: second} // 100 ms apart
			t0 := clk.Now()
			prios := []int{0, 3, 9, 3, 0, 5}
			var jobs []kairos.Job
			for i := range 20 {
				k := i * 7 % 20
				jobs = append(jobs, prioJob(tp, fmt.Sprintf("j%02d", k), t0.Add(time.Duration(k)*time.Millisecond), prios[k%len(prios)]))
			}
			run := simRate(t, s, clk, tp, jobs, ahead)
			want := slices.Clone(jobs)
			slices.SortStableFunc(want, func(a, b kairos.Job) int {
				return kairos.WaitOrder(a, a.RunAt).Compare(kairos.WaitOrder(b, b.RunAt))
			})
			// free when asked: the first job (Gate), or (Pace) each whose
			// time was within the hold of its due time when claimed
			free := map[string]bool{run.ids[0]: true}
			for i, id := range run.ids {
				if j := jobs[slices.IndexFunc(jobs, func(j kairos.Job) bool { return j.ID == id })]; ahead && run.at[i].Sub(j.RunAt) <= 100*time.Millisecond {
					free[id] = true
				}
			}
			var gotIDs, wantIDs []string
			for i, j := range want {
				if !free[j.ID] {
					wantIDs = append(wantIDs, j.ID)
				}
				if id := run.ids[i]; !free[id] {
					gotIDs = append(gotIDs, id)
				}
			}
			if !slices.Equal(gotIDs, wantIDs) || len(free) > 2 {
				t.Errorf("order after those free when asked (%v)\n got %v\nwant %v", free, gotIDs, wantIDs)
			}
			for i := 1; i < len(run.at); i++ {
				if d := run.at[i].Sub(run.at[i-1]); d < 100*time.Millisecond {
					t.Errorf("%s and %s start %v apart, under the pace", run.ids[i-1], run.ids[i], d)
				}
			}
			if last := run.at[len(run.at)-1].Sub(t0); last > 21*100*time.Millisecond {
				t.Errorf("the last starts at +%v: times were left idle", last)
			}
			if run.asks > 3*len(jobs) {
				t.Errorf("%d asks for %d jobs", run.asks, len(jobs))
			}
			t.Logf("%d asks for %d jobs, the last at +%v", run.asks, len(jobs), run.at[len(run.at)-1].Sub(t0))
		})
	}
}

// Under a circuit breaker the probe is the job first in wait order among
// those waiting for the cool-down to end, whichever process asks first.
func TestBreakerProbeIsFirstInWaitOrder(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	tp := kairos.Topic{Tenant: "acme", Name: "partner", BreakerFailures: 1, BreakerCooldown: 10 * time.Second}
	due := clk.Now()
	failed := prioJob(tp, "failed", due, 0)
	gates(t, s, tp, []kairos.Job{failed})
	if b, err := s.BreakerAnswer(ctx, tp, failed, false); err != nil || b.State != "open" {
		t.Fatalf("%+v %v", b, err)
	}
	low := prioJob(tp, "low", due, 0)                    // held by process A
	high := prioJob(tp, "high", due.Add(time.Second), 9) // held by process B
	for _, j := range []kairos.Job{low, high} {
		if rs := gates(t, s, tp, []kairos.Job{j}); rs[0].Gate != kairos.GateWait || !rs[0].At.Equal(due.Add(10*time.Second)) {
			t.Fatalf("%s while open: %+v", j.ID, rs)
		}
	}
	clk.Add(10 * time.Second)
	// A asks first: high is due back now and ahead of low
	if rs := gates(t, s, tp, []kairos.Job{low}); rs[0].Gate != kairos.GateWait || !rs[0].At.Equal(clk.Now().Add(time.Second)) {
		t.Fatalf("low with high due back: %+v, want to wait a second", rs)
	}
	if rs := gates(t, s, tp, []kairos.Job{high}); rs[0].Gate != kairos.GateProbe {
		t.Fatalf("high: %+v, want the probe", rs)
	}
	if b, err := s.BreakerAnswer(ctx, tp, high, true); err != nil || b.State != "closed" {
		t.Fatalf("%+v %v", b, err)
	}
	clk.Add(time.Second)
	if rs := gates(t, s, tp, []kairos.Job{low}); rs[0].Gate != kairos.GateGo {
		t.Fatalf("low after the probe closed it: %+v", rs)
	}
	// a job ahead that never comes back holds the probe back only until
	// it lapses
	if b, err := s.BreakerAnswer(ctx, tp, low, false); err != nil || b.State != "open" {
		t.Fatalf("%+v %v", b, err)
	}
	gone := prioJob(tp, "gone", clk.Now(), 9)
	gates(t, s, tp, []kairos.Job{gone, low})
	clk.Add(10 * time.Second)
	if rs := gates(t, s, tp, []kairos.Job{low}); rs[0].Gate != kairos.GateWait {
		t.Fatalf("low with gone due back: %+v", rs)
	}
	clk.Add(WaitLapse + time.Millisecond)
	if rs := gates(t, s, tp, []kairos.Job{low}); rs[0].Gate != kairos.GateProbe {
		t.Fatalf("low after gone lapsed: %+v, want the probe", rs)
	}
}

// Jobs of higher priority arriving behind a long queue go ahead of it in
// a few asks each, not one for each job they pass: 300 jobs of priority 0
// queued in one process, 300 of priority 9 due a little later in another,
// under a rate of 10 a second, asked about now (Gate) and ahead (Pace).
func TestRatePriorityAheadOfALongQueue(t *testing.T) {
	for _, ahead := range []bool{false, true} {
		t.Run(map[bool]string{false: "gate", true: "pace"}[ahead], func(t *testing.T) {
			s, clk := newStore(t, Options{})
			tp := kairos.Topic{Tenant: "acme", Name: "partner", RateLimit: 10, RatePeriod: second}
			t0 := clk.Now()
			var jobs []kairos.Job
			for i := range 300 {
				jobs = append(jobs, prioJob(tp, fmt.Sprintf("low%03d", i), t0, 0),
					prioJob(tp, fmt.Sprintf("high%03d", i), t0.Add(time.Second), 9))
			}
			run := simRate(t, s, clk, tp, jobs, ahead)
			// the lows that went before the last high: those of the second
			// before the highs were due (10 a second), and one whose time was
			// taken as they came
			lastHigh := slices.IndexFunc(run.ids, func(id string) bool { return id == "high299" })
			lows := 0
			for _, id := range run.ids[:lastHigh] {
				if id[0] == 'l' {
					lows++
				}
			}
			if lows > 12 {
				t.Errorf("%d jobs of priority 0 went before the last of priority 9", lows)
			}
			if per := float64(run.asks) / float64(len(jobs)); per > 4 {
				t.Errorf("%.1f asks a job", per)
			}
			t.Logf("%d asks for %d jobs; %d of priority 0 before the last of priority 9", run.asks, len(jobs), lows)
		})
	}
}

// A backlog kept waiting by the rate costs each job one wait and one ask
// more, and keeps the rate, when the jobs come back to four shards claimed
// in turn a millisecond apart, up to 150 ms ahead of their times, and some
// claims are handled late (noise): 2,000 jobs due at once at 200 a second.
func TestRateBacklogComesBackOnce(t *testing.T) {
	s, clk := newStore(t, Options{})
	tp := kairos.Topic{Tenant: "acme", Name: "partner", RateLimit: 200, RatePeriod: time.Second}
	t0 := clk.Now().Add(time.Second)
	type job struct {
		j     kairos.Job
		told  time.Time
		shard int
	}
	pending := map[*job]bool{}
	for i := range 2000 {
		pending[&job{j: kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "partner", ID: fmt.Sprintf("f%d", i)}, Attempts: 1, RunAt: t0}, told: t0, shard: i % 4}] = true
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var starts []time.Time
	asks, waits := 0, 0
	for step := 0; len(pending) > 0; step++ {
		if step > 100000 {
			t.Fatalf("%d jobs left", len(pending))
		}
		clk.Add(time.Millisecond)
		var batch []*job
		for j := range pending {
			if j.shard == step%4 && !j.told.After(clk.Now().Add(150*time.Millisecond)) {
				batch = append(batch, j)
			}
		}
		if len(batch) == 0 {
			continue
		}
		slices.SortFunc(batch, func(a, b *job) int { return strings.Compare(a.j.ID, b.j.ID) })
		if rng.IntN(4) == 0 {
			clk.Add(time.Duration(rng.IntN(15)) * time.Millisecond) // handled late
		}
		js, dues, order := make([]kairos.Job, len(batch)), make([]time.Time, len(batch)), make([]time.Time, len(batch))
		for k, j := range batch {
			js[k], dues[k], order[k] = j.j, j.told, j.j.RunAt
		}
		rs, err := s.Pace(context.Background(), tp, tp.Flow(), js, dues, order, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		asks += len(rs)
		for k, r := range rs {
			if r.Gate == kairos.GateWait {
				waits++
				batch[k].told = r.At
				continue
			}
			starts = append(starts, r.At)
			delete(pending, batch[k])
		}
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	rate := float64(len(starts)-1) / starts[len(starts)-1].Sub(starts[0]).Seconds()
	t.Logf("%d started at %.1f a second; %d asks, %d waits", len(starts), rate, asks, waits)
	if waits > len(starts) || asks > 2*len(starts) {
		t.Errorf("%d waits and %d asks for %d jobs: some came back more than once", waits, asks, len(starts))
	}
	if rate < 195 { // 200 a second less the guard: 196
		t.Errorf("%.1f a second, under the rate's 196", rate)
	}
}

// Jobs of equal wait order waiting for a permit do not hold a free one
// back from another of that order: which of them goes is their
// processes' affair (each asks about the jobs it holds in its own order).
func TestGateEqualOrderDoesNotHoldAPermitBack(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	tp := kairos.Topic{Tenant: "acme", Name: "lambda", Parallelism: 1}
	due := clk.Now()
	x, a, b := prioJob(tp, "x", due, 0), prioJob(tp, "a", due, 0), prioJob(tp, "b", due, 0)
	gates(t, s, tp, []kairos.Job{x})
	if rs := gates(t, s, tp, []kairos.Job{a}); rs[0].Gate != kairos.GateFull {
		t.Fatalf("a: %+v", rs)
	}
	if err := s.ReturnPermit(ctx, tp, x); err != nil {
		t.Fatal(err)
	}
	if rs := gates(t, s, tp, []kairos.Job{b}); rs[0].Gate != kairos.GateGo {
		t.Fatalf("b, of a's order, with a waiting: %+v, want kairos.GateGo", rs)
	}
}
