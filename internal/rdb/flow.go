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
// order: every kairos process asks the same script, so the topic's
// limits hold across them. lease bounds how long a permit is held when
// its holder never calls Done. The limits let jobs go in held order
// across processes: order[i] is jobs[i]'s held order (kairos.WaitOrder;
// zero or absent: now), which the caller knows from when the job has been
// due. A job held back (kairos.GateWait, kairos.GateFull) waits in its
// flow's waiting set, and no job goes while a waiting one ahead of it is
// expected back: one told to wait (kairos.GateWait) is expected at its
// time, one refused a permit (kairos.GateFull) at once, as its caller asks
// again about the jobs it still holds; one that does not come back stops
// counting WaitLapse after it was expected. A job refused a free permit because one waits
// ahead of it says so on the wake channel (Wake.Flow): the process
// holding that one asks again at once.
func (s *Store) Gate(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, order []time.Time, lease time.Duration) ([]kairos.GateResult, error) {
	out := make([]kairos.GateResult, len(jobs))
	if !t.Limited() || len(jobs) == 0 {
		return out, nil
	}
	interval := paceOf(t)
	argv := make([]any, 0, 9+2*len(jobs))
	brk := 0
	if t.HasBreaker() {
		brk = 1
	}
	argv = append(argv, s.scriptNow(), strconv.FormatFloat(interval, 'f', 3, 64), t.Parallelism, lease.Milliseconds(), brk, "", WaitLapse.Milliseconds(),
		s.k.wake(), flowFreedPrefix+t.Tenant+"/"+flow)
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
	return out, s.flowgate(ctx, t, flow, argv, out)
}

// WaitLapse is how long after it was expected back a job held back by a
// flow's limits still counts as waiting (Gate): a process asks again
// about the jobs it holds every few tens of milliseconds, and a job given
// back to Redis until its turn comes back within milliseconds of it; so
// only a job whose process died, or that was cancelled, lapses; until
// then it holds back the flow's jobs behind it in held order.
const WaitLapse = time.Second

// flowgate runs flowgate.lua for flow of topic t and reads its answers
// into out, one a job.
func (s *Store) flowgate(ctx context.Context, t kairos.Topic, flow string, argv []any, out []kairos.GateResult) error {
	tag := s.k.flow(t.Tenant, flow)
	keys := []string{tag + keyFlowPace, tag + keyFlowPermits, tag + keyFlowBreaker, tag + keyFlowTaken,
		tag + keyFlowWait, tag + keyFlowWaitLapse}
	res, err := s.run(ctx, flowgateScript, keys, argv...).Slice()
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
// time (dues[i]), in one call, wherever their due times fall and whichever
// process or shard asks first: kairos.GateGo with that time (At), when it
// is at most hold after the job's due time (or now, when that is later):
// the caller holds the job until then and starts it without asking Gate;
// kairos.GateWait with its turn when the rate holds it back further, or
// when jobs ahead of it in held order (order[i], as for Gate; zero: its due
// time) wait for times before it: the job goes back to Redis until then,
// and is paced again as it is claimed.
func (s *Store) Pace(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, dues, order []time.Time, hold time.Duration) ([]kairos.GateResult, error) {
	out := make([]kairos.GateResult, len(jobs))
	if !t.Paced() || len(jobs) == 0 {
		for i := range out {
			out[i].At = dues[i]
		}
		return out, nil
	}
	argv := make([]any, 0, 9+3*len(jobs))
	argv = append(argv, s.scriptNow(), strconv.FormatFloat(paceOf(t), 'f', 3, 64), 0, 0, 0, max(hold.Milliseconds(), 1), WaitLapse.Milliseconds(), "", "")
	for i, j := range jobs {
		o := dues[i]
		if i < len(order) && !order[i].IsZero() {
			o = order[i]
		}
		argv = append(argv, attemptMember(j), ms(o), ms(dues[i]))
	}
	if err := s.flowgate(ctx, t, flow, argv, out); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].At.Before(dues[i]) { // ms rounding: never before its due time
			out[i].At = dues[i]
		}
	}
	return out, nil
}

// Done gives back the permit job's attempt took from its flow
// (nothing when the topic has no parallelism limit).
func (s *Store) Done(ctx context.Context, t kairos.Topic, j kairos.Job) error {
	if !t.TakesPermits() {
		return nil
	}
	if err := s.c.ZRem(ctx, s.k.flow(t.Tenant, kairos.FlowOf(j, t))+keyFlowPermits, attemptMember(j)).Err(); err != nil {
		return fmt.Errorf("give back the permit of %s attempt %d: %w", j.JobKey, j.Attempts, err)
	}
	return nil
}

// Outcome records the answer to job's attempt in its flow's circuit
// breaker (nothing when the topic has none) and returns the breaker's
// state, Changed when this answer opened or closed it.
func (s *Store) Outcome(ctx context.Context, t kairos.Topic, j kairos.Job, delivered bool) (kairos.Breaker, error) {
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
