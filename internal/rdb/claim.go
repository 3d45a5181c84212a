package rdb

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/kairos-sh/kairos"
)

// Pass is the result of one Claim call.
type Pass struct {
	Claimed int       // jobs pushed onto ready lists
	Next    time.Time // when the shard next has work: its earliest wheel slot or lease; zero when none
	Now     time.Time // the Redis time the claim was decided at
	// Refills is how many of the shard's schedules wait for more instants
	// (Store.RefillSchedules).
	Refills int
	// Handles are the topics whose ready lists in the shard got jobs.
	Handles []string
	// Active is how many of the shard's jobs are under lease: claimed, and
	// their attempt not finished.
	Active int
	// Skipped are the instants of schedules that overlap (skip or
	// buffer_one) did not fire in this call, by topic; nil when none.
	Skipped []TopicCount
}

// TopicCount is a number of something for one tenant's topic.
type TopicCount struct {
	Tenant, Topic string
	N             int
}

// Claim is the result of one ClaimDue call.
type Claim struct {
	Jobs    []kairos.Claimed
	Next    time.Time
	Now     time.Time
	Refills int
	Skipped []TopicCount // as Pass.Skipped
}

// maxClaim bounds a claim's batch: Lua limits how many values one call can
// take.
const maxClaim = 2000

// Claim takes up to limit jobs of shard due by now + ahead, starts an
// attempt on each and pushes it onto its topic's ready list in the shard,
// where workers pop it (Pop): it is active, with a lease of its due time
// plus its callback timeout (leaseTimeout when it sets none) plus the
// store's lease margin. Leases that lapsed are claimed again first. What is
// due is decided on Redis's own clock (TIME, inside the script), never on
// this machine's estimate of it. Two scanners claiming the same shard at
// once cannot hand a job out twice: the claim is one script, and what it
// claims is in Redis when it returns, so a lost reply loses no job.
func (s *Store) Claim(ctx context.Context, shard, limit int, ahead, leaseTimeout time.Duration) (Pass, error) {
	limit = min(max(limit, 0), maxClaim)
	res, err := s.run(ctx, claimScript, []string{s.k.pool(shard), s.k.due(shard), s.k.schedules(shard), s.k.refills(shard), s.k.parkSet(shard),
		s.k.leases(shard), s.k.popLeases(shard)},
		s.scriptNow(), s.k.tag(shard), ahead.Milliseconds(), limit, s.leaseMargin().Milliseconds(), leaseTimeout.Milliseconds(),
		s.popLease().Milliseconds()).Slice()
	if err != nil {
		return Pass{}, fmt.Errorf("claim shard %d: %w", shard, err)
	}
	var p Pass
	p.Claimed = int(toInt(res[0]))
	p.Next, _ = redisTime(res[1])
	p.Now, _ = redisTime(res[2])
	p.Refills = int(toInt(res[4]))
	p.Active = int(toInt(res[6]))
	hs, _ := res[5].([]any)
	for _, h := range hs {
		if str, ok := h.(string); ok {
			p.Handles = append(p.Handles, str)
		}
	}
	if len(res) > 7 {
		p.Skipped = s.topicCounts(ctx, res[7])
	}
	return p, nil
}

// topicCounts reads a claim's "handle, n" pairs. A handle whose topic
// cannot be read (Redis failed since the claim) is left out: the counts
// feed metrics only, and the claim has happened whatever they say.
func (s *Store) topicCounts(ctx context.Context, v any) []TopicCount {
	pairs, _ := v.([]any)
	var out []TopicCount
	for i := 0; i+1 < len(pairs); i += 2 {
		h, _ := pairs[i].(string)
		tenant, topic, err := s.topicOf(ctx, h)
		if err != nil {
			continue
		}
		out = append(out, TopicCount{Tenant: tenant, Topic: topic, N: int(toInt(pairs[i+1]))})
	}
	return out
}

// ClaimDue is Claim followed by taking, without waiting, what it pushed
// onto the ready lists: the jobs a worker would pop. For tests and tools
// that drive the store by hand.
func (s *Store) ClaimDue(ctx context.Context, shard, limit int, ahead, leaseTimeout time.Duration) (Claim, error) {
	p, err := s.Claim(ctx, shard, limit, ahead, leaseTimeout)
	if err != nil {
		return Claim{}, err
	}
	c := Claim{Next: p.Next, Now: p.Now, Refills: p.Refills, Skipped: p.Skipped}
	for _, h := range p.Handles {
		for {
			cs, err := s.Pop(ctx, []int{shard}, []string{h}, maxClaim, 0)
			if err != nil {
				return c, err
			}
			if cs, err = s.Start(ctx, cs); err != nil {
				return c, err
			}
			if len(cs) == 0 {
				break
			}
			c.Jobs = append(c.Jobs, cs...)
		}
	}
	return c, nil
}

// popLease is how long after its due time a job pushed onto a ready list
// and not started is pushed again: long enough for any worker that popped
// it to start it, short enough that a pop whose reply was lost delays its
// jobs by no more. Half the ready lease, which bounds how long a worker
// holds a due job for a free slot.
func (s *Store) popLease() time.Duration { return s.opts.ReadyLease / 2 }

// leaseMargin is what a claimed job's lease adds to its due time and
// callback timeout: the longest it may be held before it starts, and the
// grace after its timeout.
func (s *Store) leaseMargin() time.Duration { return s.opts.ReadyLease + s.opts.LeaseGrace }

// Release gives back claimed jobs that this process will not start: each
// keeps its due time (or waits until a later Due set by the caller, as
// flow control does) and loses no attempt. A job whose claim lapsed meanwhile
// is left alone. It returns the first error.
func (s *Store) Release(ctx context.Context, cs []kairos.Claimed) error {
	now := ms(s.Now())
	// one call a shard for up to releaseBatch of its jobs
	type call struct {
		shard int
		argv  []any
		first kairos.JobKey
	}
	var calls []*call
	open := map[int]*call{}
	for _, c := range cs {
		j := c.Job
		sh := s.k.shardOf(j.JobKey)
		cl := open[sh]
		if cl == nil || len(cl.argv) >= 3+4*releaseBatch {
			cl = &call{shard: sh, argv: []any{s.k.tag(sh), now, WakeHorizon.Milliseconds()}, first: j.JobKey}
			open[sh] = cl
			calls = append(calls, cl)
		}
		h, _ := s.handles.handle(topicField(j.Tenant, j.Topic)) // known: the claim resolved it
		cl.argv = append(cl.argv, h, j.ID, j.Attempts, ms(c.Due))
	}
	cmds := s.evalAll(ctx, releaseScript, len(calls), func(i int) ([]string, []any) {
		return []string{s.k.pool(calls[i].shard), s.k.due(calls[i].shard), s.k.leases(calls[i].shard)}, calls[i].argv
	})
	var first error
	for i, c := range cmds {
		res, err := c.Slice()
		if err != nil {
			n := (len(calls[i].argv) - 3) / 4
			first = cmp.Or(first, fmt.Errorf("release %d jobs of shard %d (%s first): %w", n, calls[i].shard, calls[i].first, err))
			continue
		}
		if len(res) > 1 {
			s.wakeFor(ctx, s.c, calls[i].shard, res[1])
		}
	}
	return first
}

// releaseBatch is the most jobs one release call gives back: a few
// milliseconds of Redis.
const releaseBatch = 500

// scriptNow is the "now" argument of scripts that decide what is due: ""
// makes them read Redis's TIME; a pinned test clock is passed as is.
func (s *Store) scriptNow() any {
	if s.opts.Now != nil {
		return ms(s.opts.Now())
	}
	return ""
}
