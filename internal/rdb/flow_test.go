package rdb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

func flowJobs(topic string, from, n, attempt int) []kairos.Job {
	js := make([]kairos.Job, n)
	for i := range js {
		js[i] = kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: topic, ID: fmt.Sprintf("j%d", from+i)}, Attempts: attempt}
	}
	return js
}

// second is a rate period of 1 s less the guard (RateGuard): 10 a second
// are 100 ms apart.
const second = time.Second - RateGuard

// waitOrders are jobs' wait orders, each job due at its RunAt (zero: now).
func waitOrders(jobs []kairos.Job) []time.Time {
	order := make([]time.Time, len(jobs))
	for i, j := range jobs {
		if !j.RunAt.IsZero() {
			order[i] = kairos.WaitOrder(j, j.RunAt)
		}
	}
	return order
}

func gates(t *testing.T, s *Store, tp kairos.Topic, jobs []kairos.Job) []kairos.GateResult {
	t.Helper()
	rs, err := s.Gate(context.Background(), tp, tp.Flow(), jobs, waitOrders(jobs), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// A rate limit paces a flow's deliveries evenly: a job whose time has not
// come is told its turn and keeps its place in wait order when it comes
// back (early: it waits again); two topics with one flow key share the
// pace.
func TestGateRatePacesAndReserves(t *testing.T) {
	s, clk := newStore(t, Options{})
	t0 := clk.Now()
	a := kairos.Topic{Tenant: "acme", Name: "a", RateLimit: 10, RatePeriod: second, FlowKey: "partner"}
	b := kairos.Topic{Tenant: "acme", Name: "b", RateLimit: 10, RatePeriod: second, FlowKey: "partner"}
	rs := gates(t, s, a, flowJobs("a", 0, 3, 1))
	if rs[0].Gate != kairos.GateGo || rs[1].Gate != kairos.GateWait || !rs[1].At.Equal(t0.Add(100*time.Millisecond)) ||
		rs[2].Gate != kairos.GateWait || !rs[2].At.Equal(t0.Add(200*time.Millisecond)) {
		t.Fatalf("first batch: %+v", rs)
	}
	rs = gates(t, s, b, flowJobs("b", 0, 1, 1))
	if rs[0].Gate != kairos.GateWait || !rs[0].At.Equal(t0.Add(300*time.Millisecond)) {
		t.Fatalf("another topic of the flow key: %+v, want the next time after a's", rs)
	}
	// j1 comes back early: it waits again for its own time.
	clk.Add(50 * time.Millisecond)
	if rs = gates(t, s, a, flowJobs("a", 1, 1, 1)); rs[0].Gate != kairos.GateWait || !rs[0].At.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("back early: %+v", rs)
	}
	clk.Add(50 * time.Millisecond)
	if rs = gates(t, s, a, flowJobs("a", 1, 1, 1)); rs[0].Gate != kairos.GateGo {
		t.Fatalf("back at its time: %+v", rs)
	}
	// A new job queues behind the waiting jobs.
	if rs = gates(t, s, a, flowJobs("a", 9, 1, 1)); rs[0].Gate != kairos.GateWait || !rs[0].At.Equal(t0.Add(400*time.Millisecond)) {
		t.Fatalf("a newcomer: %+v", rs)
	}
	// Another topic with its own flow is not slowed.
	own := kairos.Topic{Tenant: "acme", Name: "own", RateLimit: 10, RatePeriod: second}
	if rs = gates(t, s, own, flowJobs("own", 0, 1, 1)); rs[0].Gate != kairos.GateGo {
		t.Fatalf("an unrelated flow: %+v", rs)
	}
	// After a quiet while, the first job goes at once.
	clk.Add(time.Minute)
	if rs = gates(t, s, a, flowJobs("a", 20, 2, 1)); rs[0].Gate != kairos.GateGo || rs[1].Gate != kairos.GateWait {
		t.Fatalf("after a quiet minute: %+v", rs)
	}
}

// Parallelism hands out as many permits as the limit; Done gives one
// back; a permit whose holder vanished lapses with its lease.
func TestGateParallelismPermits(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	tp := kairos.Topic{Tenant: "acme", Name: "lambda", Parallelism: 2}
	js := flowJobs("lambda", 0, 3, 1)
	rs := gates(t, s, tp, js)
	if rs[0].Gate != kairos.GateGo || rs[1].Gate != kairos.GateGo || rs[2].Gate != kairos.GateFull {
		t.Fatalf("3 jobs, 2 permits: %+v", rs)
	}
	if rs = gates(t, s, tp, js[2:]); rs[0].Gate != kairos.GateFull {
		t.Fatalf("still full: %+v", rs)
	}
	if err := s.ReturnPermit(ctx, tp, js[0]); err != nil {
		t.Fatal(err)
	}
	if rs = gates(t, s, tp, js[2:]); rs[0].Gate != kairos.GateGo {
		t.Fatalf("after Done: %+v", rs)
	}
	if rs = gates(t, s, tp, flowJobs("lambda", 3, 1, 1)); rs[0].Gate != kairos.GateFull {
		t.Fatalf("full again: %+v", rs)
	}
	clk.Add(11 * time.Second) // past the permits' lease
	if rs = gates(t, s, tp, flowJobs("lambda", 3, 2, 1)); rs[0].Gate != kairos.GateGo || rs[1].Gate != kairos.GateGo {
		t.Fatalf("after the permits lapsed: %+v", rs)
	}
}

// With both limits, a job without a permit does not take a rate slot.
func TestGateRateAndParallelism(t *testing.T) {
	s, clk := newStore(t, Options{})
	t0 := clk.Now()
	tp := kairos.Topic{Tenant: "acme", Name: "both", RateLimit: 10, RatePeriod: second, Parallelism: 1}
	rs := gates(t, s, tp, flowJobs("both", 0, 3, 1))
	if rs[0].Gate != kairos.GateGo || rs[1].Gate != kairos.GateFull || rs[2].Gate != kairos.GateFull {
		t.Fatalf("%+v", rs)
	}
	if err := s.ReturnPermit(context.Background(), tp, flowJobs("both", 0, 1, 1)[0]); err != nil {
		t.Fatal(err)
	}
	if rs = gates(t, s, tp, flowJobs("both", 1, 1, 1)); rs[0].Gate != kairos.GateWait || !rs[0].At.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("%+v", rs)
	}
}

// A waiting job goes when it comes back to the first free time, late or
// not: a late one leaves its turn unused, and the next is pushed back to
// keep the pace, so deliveries never bunch above it.
func TestGateLateReturnNeverBunches(t *testing.T) {
	s, clk := newStore(t, Options{})
	t0 := clk.Now()
	tp := kairos.Topic{Tenant: "acme", Name: "a", RateLimit: 10, RatePeriod: second}
	rs := gates(t, s, tp, flowJobs("a", 0, 3, 1))
	if rs[1].Gate != kairos.GateWait || !rs[1].At.Equal(t0.Add(100*time.Millisecond)) || rs[2].Gate != kairos.GateWait || !rs[2].At.Equal(t0.Add(200*time.Millisecond)) {
		t.Fatalf("%+v", rs)
	}
	clk.Add(110 * time.Millisecond) // j1 back 10 ms late: it goes
	if rs = gates(t, s, tp, flowJobs("a", 1, 1, 1)); rs[0].Gate != kairos.GateGo {
		t.Fatalf("back a little late: %+v", rs)
	}
	clk.Add(90 * time.Millisecond) // j2 back at its turn, 90 ms after j1 went: it waits for 210
	if rs = gates(t, s, tp, flowJobs("a", 2, 1, 1)); rs[0].Gate != kairos.GateWait || !rs[0].At.Equal(t0.Add(210*time.Millisecond)) {
		t.Fatalf("back at its turn, under the pace after a late one: %+v", rs)
	}
	clk.Add(10 * time.Millisecond)
	if rs = gates(t, s, tp, flowJobs("a", 2, 1, 1)); rs[0].Gate != kairos.GateGo {
		t.Fatalf("back at its new turn: %+v", rs)
	}
	if rs = gates(t, s, tp, flowJobs("a", 9, 1, 1)); rs[0].Gate != kairos.GateWait || !rs[0].At.Equal(t0.Add(310*time.Millisecond)) {
		t.Fatalf("a newcomer: %+v", rs)
	}
}

// A period's deliveries are spread over the period and RateGuard: 10 a
// second go 102 ms apart, so a receiver counting arrivals in any second
// sees at most 10 while each arrives within the guard of its time.
func TestGateRateGuard(t *testing.T) {
	s, clk := newStore(t, Options{})
	t0 := clk.Now()
	tp := kairos.Topic{Tenant: "acme", Name: "a", RateLimit: 10, RatePeriod: time.Second}
	rs := gates(t, s, tp, flowJobs("a", 0, 11, 1))
	for i, r := range rs {
		want := t0.Add(time.Duration(i) * (time.Second + RateGuard) / 10)
		if (i == 0) != (r.Gate == kairos.GateGo) || !r.At.Equal(want) {
			t.Fatalf("job %d: %+v, want at +%v", i, r, want.Sub(t0))
		}
	}
}

// The circuit breaker opens after the threshold of failures in a row,
// holds every job for its cool-down, then lets one probe go; the probe's
// failure opens it for twice as long, a delivery closes it. Each of those
// moves, and only they, say Changed.
func TestGateBreaker(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	t0 := clk.Now()
	tp := kairos.Topic{Tenant: "acme", Name: "partner", BreakerFailures: 3, BreakerCooldown: 10 * time.Second}
	outcome := func(j kairos.Job, ok bool) kairos.Breaker {
		t.Helper()
		b, err := s.BreakerAnswer(ctx, tp, j, ok)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	js := flowJobs("partner", 0, 6, 1)
	if rs := gates(t, s, tp, js); rs[0].Gate != kairos.GateGo || rs[5].Gate != kairos.GateGo {
		t.Fatalf("closed: %+v", rs)
	}
	outcome(js[0], false)
	if b := outcome(js[1], true); b.Changed { // a delivery: the count starts again
		t.Fatalf("a delivery while closed: %+v, want no change", b)
	}
	outcome(js[2], false)
	if b := outcome(js[3], false); b.State != "closed" || b.Changed {
		t.Fatalf("after 2 failures in a row: %+v", b)
	}
	if b := outcome(js[4], false); b.State != "open" || !b.Until.Equal(t0.Add(10*time.Second)) || !b.Changed {
		t.Fatalf("after 3 failures in a row: %+v", b)
	}
	if b := outcome(js[5], false); b.Changed { // started before it opened: changes nothing
		t.Fatalf("a failure while open: %+v, want no change", b)
	}
	if b, _ := s.BreakerState(ctx, tp); b.State != "open" || !b.Until.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("state: %+v", b)
	}
	later := flowJobs("partner", 10, 3, 1)
	for i := range later {
		later[i].RunAt = t0 // due together: none ahead of another
	}
	if rs := gates(t, s, tp, later); rs[0].Gate != kairos.GateWait || !rs[0].At.Equal(t0.Add(10*time.Second)) || rs[2].Gate != kairos.GateWait {
		t.Fatalf("open: %+v", rs)
	}
	clk.Add(10 * time.Second)
	if b, _ := s.BreakerState(ctx, tp); b.State != "half-open" {
		t.Fatalf("after the cool-down: %+v", b)
	}
	rs := gates(t, s, tp, later)
	if rs[0].Gate != kairos.GateProbe || rs[1].Gate != kairos.GateWait || !rs[1].At.Equal(clk.Now().Add(time.Second)) {
		t.Fatalf("half-open: %+v, want one probe", rs)
	}
	if b := outcome(later[0], false); b.State != "open" || !b.Until.Equal(clk.Now().Add(20*time.Second)) || !b.Changed {
		t.Fatalf("a failed probe: %+v, want open for 20 s", b)
	}
	clk.Add(20 * time.Second)
	if rs = gates(t, s, tp, later[1:]); rs[0].Gate != kairos.GateProbe || rs[1].Gate != kairos.GateWait {
		t.Fatalf("half-open again: %+v", rs)
	}
	if b := outcome(later[1], true); b.State != "closed" || !b.Changed {
		t.Fatalf("a delivered probe: %+v", b)
	}
	if rs = gates(t, s, tp, later[2:]); rs[0].Gate != kairos.GateGo {
		t.Fatalf("closed again: %+v", rs)
	}
}

// A pace finer than a millisecond lets the jobs of the next millisecond go
// at once (5 a ms at 5,000/s: 6 in all, now and within the ms) and tells
// the others their turns, the 5,001st a second ahead.
func TestGateFinePace(t *testing.T) {
	s, clk := newStore(t, Options{})
	tp := kairos.Topic{Tenant: "acme", Name: "fast", RateLimit: 5000, RatePeriod: second}
	rs := gates(t, s, tp, flowJobs("fast", 0, 5001, 1))
	goNow, last := 0, clk.Now()
	for _, r := range rs {
		switch r.Gate {
		case kairos.GateGo:
			goNow++
		case kairos.GateWait:
			last = r.At
		default:
			t.Fatalf("%+v", r)
		}
	}
	if goNow != 6 || !last.Equal(clk.Now().Add(time.Second)) {
		t.Fatalf("%d go now, the last reserved at +%v; want 6, and the 5001st at +1s", goNow, last.Sub(clk.Now()))
	}
}

func paces(t *testing.T, s *Store, tp kairos.Topic, jobs []kairos.Job, dues []time.Time, hold time.Duration) []kairos.GateResult {
	t.Helper()
	rs, err := s.Pace(context.Background(), tp, tp.Flow(), jobs, dues, nil, hold)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// Pace keeps each job's due time while the rate allows it, whichever
// shard asks first: jobs paced ahead leave the free times between them to
// jobs paced later, and a job due at a taken time gets the first free one
// after it. A job whose time is further than the hold is told its turn,
// and goes when it comes back then.
func TestPaceKeepsDueTimesAcrossShards(t *testing.T) {
	s, clk := newStore(t, Options{})
	t0 := clk.Now()
	tp := kairos.Topic{Tenant: "acme", Name: "a", RateLimit: 10, RatePeriod: second} // 100 ms apart
	at := func(d time.Duration) time.Time { return t0.Add(d * time.Millisecond) }
	// shard A's claim: due at 0, 250 and 500
	rs := paces(t, s, tp, flowJobs("a", 0, 3, 1), []time.Time{at(0), at(250), at(500)}, time.Second)
	for i, want := range []time.Time{at(0), at(250), at(500)} {
		if rs[i].Gate != kairos.GateGo || !rs[i].At.Equal(want) {
			t.Fatalf("shard A job %d: %+v, want go at %v", i, rs[i], want.Sub(t0))
		}
	}
	// shard B's claim, asked after A's though due in between: 120 is free
	// (120 from 0, 130 from 250); 130 is not (10 from 120), nor is any time
	// until 350 (100 from 250)
	rs = paces(t, s, tp, flowJobs("a", 10, 2, 1), []time.Time{at(120), at(130)}, time.Second)
	if rs[0].Gate != kairos.GateGo || !rs[0].At.Equal(at(120)) || rs[1].Gate != kairos.GateGo || !rs[1].At.Equal(at(350)) {
		t.Fatalf("shard B: %+v, want go at 120 and at 350", rs)
	}
	// pushed back further than the hold: told its turn, and Gate lets it
	// go then
	rs = paces(t, s, tp, flowJobs("a", 20, 3, 1), []time.Time{at(2000), at(2000), at(2000)}, 150*time.Millisecond)
	if rs[0].Gate != kairos.GateGo || !rs[0].At.Equal(at(2000)) || rs[1].Gate != kairos.GateGo || !rs[1].At.Equal(at(2100)) ||
		rs[2].Gate != kairos.GateWait || !rs[2].At.Equal(at(2200)) {
		t.Fatalf("three due at once: %+v, want go at 2000 and 2100, wait for 2200", rs)
	}
	clk.Add(2200 * time.Millisecond)
	if g := gates(t, s, tp, flowJobs("a", 22, 1, 1)); g[0].Gate != kairos.GateGo {
		t.Fatalf("back at its turn: %+v", g)
	}
	// asked now, a job takes the first free time from now
	if g := gates(t, s, tp, flowJobs("a", 30, 1, 1)); g[0].Gate != kairos.GateWait || !g[0].At.Equal(at(2300)) {
		t.Fatalf("after the one back at its turn: %+v, want 2300", g)
	}
}

// Whatever order shards ask in and wherever the due times fall, Pace never
// hands out a time before a job's due time nor two times closer than the
// pace, and a job whose due time was free when it asked keeps it.
func TestPaceNeverBunchesNorFiresEarly(t *testing.T) {
	s, clk := newStore(t, Options{})
	t0 := clk.Now()
	tp := kairos.Topic{Tenant: "acme", Name: "r", RateLimit: 50, RatePeriod: second} // 20 ms apart
	rng := rand.New(rand.NewPCG(1, 2))
	var taken []time.Time
	for batch := range 40 {
		n := 1 + rng.IntN(12)
		jobs := flowJobs("r", batch*100, n, 1)
		dues := make([]time.Time, n)
		base := time.Duration(rng.IntN(3000)) * time.Millisecond
		for i := range dues {
			dues[i] = t0.Add(base + time.Duration(i*rng.IntN(40))*time.Millisecond)
		}
		rs := paces(t, s, tp, jobs, dues, time.Hour)
		for i, r := range rs {
			if r.Gate != kairos.GateGo || r.At.Before(dues[i]) {
				t.Fatalf("batch %d job %d due +%v: %+v", batch, i, dues[i].Sub(t0), r)
			}
			free := true
			for _, x := range taken {
				if d := x.Sub(dues[i]); d > -20*time.Millisecond && d < 20*time.Millisecond {
					free = false
				}
			}
			if free && !r.At.Equal(dues[i]) {
				t.Fatalf("batch %d job %d: its due time +%v was free, got +%v", batch, i, dues[i].Sub(t0), r.At.Sub(t0))
			}
			taken = append(taken, r.At)
		}
	}
	slices.SortFunc(taken, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(taken); i++ {
		if d := taken[i].Sub(taken[i-1]); d < 20*time.Millisecond {
			t.Fatalf("times +%v and +%v are %v apart, under the pace", taken[i-1].Sub(t0), taken[i].Sub(t0), d)
		}
	}
}
