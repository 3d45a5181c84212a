package kairos

import "time"

// Flow control's rule: which of a topic's flow limits apply to its jobs,
// and where each is asked. It is stated here once; internal/rdb (the
// scripts' callers), callback (the flow client) and the rest read these
// methods, never the Topic's limit fields, to decide. Adding a flow rule
// (fair keys, ordered keys, batches) is a method here, its script under
// internal/rdb/lua, and its rows in TestFlowRule.
//
//	limits set               Limited  Paced  Gated  TakesPermits  HasBreaker
//	none                     -        -      -      -             -
//	rate alone               yes      yes    -      -             -
//	parallelism (and rate)   yes      -      yes    yes           -
//	breaker (and any)        yes      -      yes    with par.     yes
//
// A Paced topic's jobs get their time from the rate as they are popped
// (Store.Pace, one call a flow for a pop) and fire then without asking;
// a Gated topic's jobs each ask the gate (Store.Gate) as they are about
// to fire, the rate included. AsksGate says it for one job.
//
// A pause is a flow limit too, but it acts before a job is claimed: a
// paused topic's jobs are parked (Store.PauseTopic) and flow control
// never sees them.

// Flow is the identity of the topic's flow-control quota within its
// tenant: a delivery topic's subscription's own (Subscription.DeliveryTopic),
// its FlowKey, or the topic's own.
func (t Topic) Flow() string {
	if t.Subscription != "" {
		return "sub:" + t.Name + "/" + t.Subscription
	}
	if t.FlowKey != "" {
		return "key:" + t.FlowKey
	}
	return "topic:" + t.Name
}

// FlowOf is the identity of the flow-control quota of job j of topic t:
// its own flow key, or its topic's flow.
func FlowOf(j Job, t Topic) string {
	if j.FlowKey != "" {
		return "key:" + j.FlowKey
	}
	return t.Flow()
}

// Limited reports whether flow control has a say about t's jobs: t has a
// rate or parallelism limit or a circuit breaker (Paced or Gated).
func (t Topic) Limited() bool { return t.Rated() || t.Gated() }

// Rated reports whether t's flow has a rate limit: each job takes a time
// from the flow's calendar, as it is popped (Paced) or at the gate.
func (t Topic) Rated() bool { return t.RateLimit > 0 }

// Paced reports whether t's jobs get their time under the rate as they are
// popped, in one call a flow for a whole pop, rather than asking the gate
// as each comes due: a rate limit alone. A paced job fires at its time
// without asking (AsksGate).
func (t Topic) Paced() bool { return t.Rated() && !t.Gated() }

// Gated reports whether each of t's jobs asks the gate as it is about to
// fire: t has a parallelism limit or a circuit breaker, which can only be
// asked then (and its rate, if any, is asked with them).
func (t Topic) Gated() bool { return t.TakesPermits() || t.HasBreaker() }

// TakesPermits reports whether each attempt of t's jobs takes one of its
// flow's permits (a parallelism limit), given back as it ends.
func (t Topic) TakesPermits() bool { return t.Parallelism > 0 }

// HasBreaker reports whether t's flow has a circuit breaker: each attempt's
// answer is told to it (the breaker answer) as the attempt ends.
func (t Topic) HasBreaker() bool { return t.BreakerFailures > 0 }

// FlowExempt reports whether j is outside its topic's flow limits at now:
// a notification (it goes to the failure or success URL: the limits and
// breaker of the topic's callback URL are not its own), or a job past its
// expiry (it takes no place in the limits: its consumer ends it).
func (j Job) FlowExempt(now time.Time) bool {
	if _, notice := NoticeOf(j.ID); notice {
		return true
	}
	return j.Expired(now)
}

// AsksGate reports whether claimed job c of topic t asks the gate before
// it fires at now: t is Limited and c is not FlowExempt, unless c was paced
// as it was popped (t is Paced) and now is within PacedLate of its time:
// one later than that asks for a new time, its own having passed unused.
func (t Topic) AsksGate(c Claimed, now time.Time) bool {
	if !t.Limited() || c.Job.FlowExempt(now) {
		return false
	}
	return !(t.Paced() && c.Paced && !now.After(c.Due.Add(PacedLate)))
}

// WaitOrder is where job j, due at due, stands while a flow limit keeps it
// waiting (the wait order): its due time less Priority steps.
func WaitOrder(j Job, due time.Time) time.Time {
	return due.Add(-time.Duration(j.Priority) * PriorityStep)
}
