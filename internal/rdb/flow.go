package rdb

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/kairos-sh/kairos"
)

// Gate asks flow (kairos.FlowOf: the jobs' flow key, or their topic's
// flow) which of jobs of topic t, claimed and due, may start now, in
// order (flowgate.lua): every kairos process asks the same script, so the
// topic's limits hold across them. lease bounds how long a permit is held
// when its holder never calls ReturnPermit. The limits let jobs go in wait order
// across processes: order[i] is jobs[i]'s wait order (kairos.WaitOrder;
// zero or absent: now), which the caller knows from when the job has been
// due. A job kept waiting (kairos.GateWait, kairos.GateFull) waits in its
// flow's waiting set, and no job goes while a waiting one ahead of it is
// expected back: one told to wait (kairos.GateWait) is expected at its
// time, one refused a permit (kairos.GateFull) at once, as its caller asks
// again about the jobs it still holds; one that does not come back stops
// counting WaitLapse after it was expected. A job refused a free permit
// because one waits ahead of it says so on the wake channel (Wake.Flow):
// the process holding that one asks again at once.
func (s *Store) Gate(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, order []time.Time, lease time.Duration) ([]kairos.GateResult, error) {
	out := make([]kairos.GateResult, len(jobs))
	if !t.Limited() || len(jobs) == 0 {
		return out, nil
	}
	a := gateArgs{Now: s.scriptNow(), Interval: paceOf(t), Parallelism: t.Parallelism, Lease: lease,
		Breaker: t.HasBreaker(), WaitLapse: WaitLapse, FreedChannel: s.k.wake(), FreedMessage: flowFreedPrefix + t.Tenant + "/" + flow}
	argv := a.argv(2 * len(jobs))
	var now time.Time
	for i, j := range jobs {
		var at time.Time
		if i < len(order) {
			at = order[i]
		}
		if at.IsZero() {
			if now.IsZero() {
				now = s.Now()
			}
			at = now
		}
		argv = append(argv, attemptMember(j), ms(at))
	}
	k := s.flowKeys(t.Tenant, flow)
	return out, s.flowCall(ctx, t, flowgateScript, []string{k.pace, k.taken, k.wait, k.waitLapse, k.permits, k.breaker}, argv, out)
}

// gateArgs are flowgate.lua's arguments before the jobs', by the names
// its header gives them, in its order (TestFlowArgsNamed).
type gateArgs struct {
	Now          any     // Store.scriptNow
	Interval     float64 // ms between deliveries (paceOf); 0: no rate limit
	Parallelism  int     // the flow's permits; 0: none
	Lease        time.Duration
	Breaker      bool
	WaitLapse    time.Duration
	FreedChannel string // where a permit kept for a job waiting ahead is told
	FreedMessage string
}

// argv returns a's arguments, with room for n more.
func (a gateArgs) argv(n int) []any {
	brk := 0
	if a.Breaker {
		brk = 1
	}
	return append(make([]any, 0, 8+n), a.Now, strconv.FormatFloat(a.Interval, 'f', 3, 64), a.Parallelism, a.Lease.Milliseconds(), brk,
		a.WaitLapse.Milliseconds(), a.FreedChannel, a.FreedMessage)
}

// WaitLapse is how long after it was expected back a job kept waiting by a
// flow's limits still counts as waiting (Gate, Pace): a process asks again
// about the jobs it holds every few tens of milliseconds, and a job given
// back to Redis until its turn comes back within milliseconds of it; so
// only a job whose process died, or that was cancelled, lapses; until then
// it keeps the flow's jobs behind it in wait order waiting.
const WaitLapse = time.Second

// flowKeys are the keys of a tenant's flow.
type flowKeys struct{ pace, taken, wait, waitLapse, permits, breaker string }

func (s *Store) flowKeys(tenant, flow string) flowKeys {
	tag := s.k.flow(tenant, flow)
	return flowKeys{pace: tag + keyFlowPace, taken: tag + keyFlowTaken, wait: tag + keyFlowWait, waitLapse: tag + keyFlowWaitLapse,
		permits: tag + keyFlowPermits, breaker: tag + keyFlowBreaker}
}

// flowCall runs sc (flowpace.lua or flowgate.lua) for a flow of topic t
// and reads its answers into out, one a job.
func (s *Store) flowCall(ctx context.Context, t kairos.Topic, sc *script, keys []string, argv []any, out []kairos.GateResult) error {
	res, err := s.run(ctx, sc, keys, argv...).Slice()
	if err != nil {
		return fmt.Errorf("flow control of topic %s/%s: %w", t.Tenant, t.Name, err)
	}
	if len(res) != 2*len(out) {
		return fmt.Errorf("flow control of topic %s/%s: %d replies for %d jobs", t.Tenant, t.Name, len(res)/2, len(out))
	}
	for i := range out {
		out[i].Gate, out[i].At = kairos.Gate(toInt(res[2*i])), fromMS(toInt(res[2*i+1]))
	}
	return nil
}

// paceOf is topic t's rate limit as ms between deliveries; 0 for none:
// RatePeriod plus RateGuard over RateLimit.
func paceOf(t kairos.Topic) float64 {
	if !t.Rated() {
		return 0
	}
	return float64(t.RatePeriod+RateGuard) / float64(t.RateLimit) / float64(time.Millisecond)
}

// RateGuard widens a rate limit's period when its deliveries are spaced:
// RateLimit of them span RatePeriod plus RateGuard. A delivery starts up
// to kairos.PacedLate after its time (and up to a millisecond before,
// when that is still its due time), and reaches the receiver a few
// milliseconds later again; so a receiver that counts arrivals in any window of
// RatePeriod still sees at most RateLimit. It costs a 1 s period 2% of its
// rate (196 a second for 200), a minute's 0.03%.
const RateGuard = 20 * time.Millisecond

// Pace takes, for jobs of flow (of topic t, Topic.Paced) just claimed,
// each the first free time of the flow's rate limit at or after its due
// time (dues[i]), in one call (flowpace.lua), wherever their due times
// fall and whichever process or shard asks first: kairos.GateGo with that
// time (At), when it is at most hold after the job's due time (or now,
// when that is later): the caller holds the job until then and starts it
// without asking Gate; kairos.GateWait with its turn when the rate keeps
// it waiting further, or when jobs ahead of it in wait order (order[i], as
// for Gate; zero: its due time) wait for times before it: the job goes
// back to Redis until then, and is paced again as it is claimed.
func (s *Store) Pace(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, dues, order []time.Time, hold time.Duration) ([]kairos.GateResult, error) {
	out := make([]kairos.GateResult, len(jobs))
	if !t.Paced() || len(jobs) == 0 {
		for i := range out {
			out[i].At = dues[i]
		}
		return out, nil
	}
	a := paceArgs{Now: s.scriptNow(), Interval: paceOf(t), Hold: max(hold, time.Millisecond), WaitLapse: WaitLapse}
	argv := a.argv(3 * len(jobs))
	for i, j := range jobs {
		o := dues[i]
		if i < len(order) && !order[i].IsZero() {
			o = order[i]
		}
		argv = append(argv, attemptMember(j), ms(o), ms(dues[i]))
	}
	k := s.flowKeys(t.Tenant, flow)
	if err := s.flowCall(ctx, t, flowpaceScript, []string{k.pace, k.taken, k.wait, k.waitLapse}, argv, out); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].At.Before(dues[i]) { // ms rounding: never before its due time
			out[i].At = dues[i]
		}
	}
	return out, nil
}

// paceArgs are flowpace.lua's arguments before the jobs', by the names its
// header gives them, in its order (TestFlowArgsNamed).
type paceArgs struct {
	Now       any     // Store.scriptNow
	Interval  float64 // ms between deliveries (paceOf)
	Hold      time.Duration
	WaitLapse time.Duration
}

// argv returns a's arguments, with room for n more.
func (a paceArgs) argv(n int) []any {
	return append(make([]any, 0, 4+n), a.Now, strconv.FormatFloat(a.Interval, 'f', 3, 64), a.Hold.Milliseconds(), a.WaitLapse.Milliseconds())
}

// ReturnPermit gives back the permit job's attempt took from its flow
// (nothing when the topic takes no permits).
func (s *Store) ReturnPermit(ctx context.Context, t kairos.Topic, j kairos.Job) error {
	if !t.TakesPermits() {
		return nil
	}
	if err := s.c.ZRem(ctx, s.k.flow(t.Tenant, kairos.FlowOf(j, t))+keyFlowPermits, attemptMember(j)).Err(); err != nil {
		return fmt.Errorf("give back the permit of %s attempt %d: %w", j.JobKey, j.Attempts, err)
	}
	return nil
}

// BreakerAnswer tells job's flow's circuit breaker the answer to job's
// attempt (the breaker answer; nothing when the topic has no breaker) and
// returns the breaker's state, Changed when this answer opened or closed
// it.
func (s *Store) BreakerAnswer(ctx context.Context, t kairos.Topic, j kairos.Job, delivered bool) (kairos.Breaker, error) {
	if !t.HasBreaker() {
		return kairos.Breaker{State: "closed"}, nil
	}
	ok := 0
	if delivered {
		ok = 1
	}
	res, err := s.run(ctx, breakerScript, []string{s.k.flow(t.Tenant, kairos.FlowOf(j, t)) + keyFlowBreaker}, s.scriptNow(), ok, attemptMember(j),
		t.BreakerFailures, t.BreakerCooldown.Milliseconds(), kairos.MaxBreakerCooldown.Milliseconds()).Slice()
	if err != nil {
		return kairos.Breaker{}, fmt.Errorf("circuit breaker of topic %s/%s: %w", t.Tenant, t.Name, err)
	}
	b := breakerOf(fmt.Sprint(res[0]), toInt(res[1]))
	b.Changed = len(res) > 2 && toInt(res[2]) == 1
	return b, nil
}

// BreakerState reads the state of topic t's circuit breaker.
func (s *Store) BreakerState(ctx context.Context, t kairos.Topic) (kairos.Breaker, error) {
	v, err := s.c.HMGet(ctx, s.k.flow(t.Tenant, t.Flow())+keyFlowBreaker, brkState, brkUntil).Result()
	if err != nil {
		return kairos.Breaker{}, fmt.Errorf("circuit breaker of topic %s/%s: %w", t.Tenant, t.Name, err)
	}
	st, _ := v[0].(string)
	u, _ := v[1].(string)
	until, _ := strconv.ParseInt(u, 10, 64)
	b := breakerOf(st, until)
	if b.State == "open" && !s.Now().Before(b.Until) {
		b.State = "half-open" // its cool-down is over: the next job probes
	}
	return b, nil
}

func breakerOf(st string, until int64) kairos.Breaker {
	switch st {
	case brkOpen:
		return kairos.Breaker{State: "open", Until: fromMS(until)}
	case brkHalfOpen:
		return kairos.Breaker{State: "half-open"}
	}
	return kairos.Breaker{State: "closed"}
}

// attemptMember names a job's attempt in its flow's sets.
func attemptMember(j kairos.Job) string {
	return j.Tenant + "/" + j.Topic + "/" + j.ID + "#" + strconv.Itoa(j.Attempts)
}
