package rdb

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/kairos-sh/kairos"
)

// Claimed is a job handed out by ClaimDue, with an attempt started on it:
// Job.Attempts is that attempt's number. It must not fire before Due.
type Claimed struct {
	Job kairos.Job
	Due time.Time
	// FireAt is when, on this machine's monotonic clock, Redis's clock has
	// surely reached Due: the claim's reply came after Redis read its
	// clock as the call ended, so counting from the reply cannot be early,
	// whatever this machine's clock says. Zero when unknown (use Store.Local).
	FireAt time.Time
	// Paced says that its flow's rate limit gave it Due (Store.Pace): it
	// starts then without asking Gate.
	Paced bool
}

// Claim is the result of one ClaimDue call.
type Claim struct {
	Jobs []Claimed
	Next time.Time // when the shard's earliest remaining wheel slot is processed; zero when none
	Now  time.Time // the Redis time the claim was decided at
	// Refills is how many of the shard's schedules wait for more instants
	// (Store.RefillSchedules).
	Refills int
}

// maxClaim bounds a claim's batch: Lua limits how many values one call can
// take.
const maxClaim = 2000

// ClaimDue hands out up to limit jobs of shard due by now + ahead, and
// starts an attempt on each: it is active, with a lease of its due time plus
// its callback timeout (leaseTimeout when it sets none) plus the store's
// lease margin. What is due is decided on Redis's own clock (TIME, inside
// the script), never on this machine's estimate of it. Two scanners claiming
// the same shard at once cannot hand a job out twice: the claim is one
// script. A job claimed ahead is the caller's to hold until Due, or to give
// back with Release.
func (s *Store) ClaimDue(ctx context.Context, shard, limit int, ahead, leaseTimeout time.Duration) (Claim, error) {
	return s.ClaimDueOnce(ctx, ClaimToken{}, shard, limit, ahead, leaseTimeout)
}

// ClaimToken makes a claim safe to repeat: ClaimDueOnce claims at most once
// per token. The zero token does not.
type ClaimToken struct {
	ID string
	// Repeat says that a call of this token may have run already (its
	// reply was lost).
	Repeat bool
}

// NewClaimToken returns a fresh token.
func NewClaimToken() ClaimToken {
	var b [8]byte
	rand.Read(b[:])
	return ClaimToken{ID: hex.EncodeToString(b[:])}
}

// ClaimTokenTTL is how long Redis remembers a claim token's jobs: a call
// whose reply was lost, repeated within it with the same token, gets them
// back (the lost call itself, run late within it, claims nothing new).
const ClaimTokenTTL = 30 * time.Second

// ClaimDueOnce is ClaimDue made safe to repeat when its reply is lost (a
// timeout, a dropped connection, a frozen Redis): the first call of a token
// claims, and every later call of the same token claims nothing new but
// hands out again the jobs the first one claimed that are still active in
// the attempt it started (none that were delivered, released or handed out
// again since), whichever of the calls Redis runs first. So a scanner that
// lost a claim's reply repeats it, with tok.Repeat set, until it gets an
// answer, and fires those jobs at once instead of leaving them to their
// leases. Calls of one token may run without the shard's lock: a repeat
// with limit 0 only recovers jobs.
func (s *Store) ClaimDueOnce(ctx context.Context, tok ClaimToken, shard, limit int, ahead, leaseTimeout time.Duration) (Claim, error) {
	limit = min(max(limit, 0), maxClaim) // 0: apply outcomes only
	repeat := ""
	if tok.Repeat {
		repeat = "1"
	}
	res, err := s.run(ctx, claimScript, []string{s.k.pool(shard), s.k.due(shard), s.k.schedules(shard), s.k.refills(shard), s.k.hold(shard)},
		s.scriptNow(), s.k.tag(shard), ahead.Milliseconds(), limit, s.leaseMargin().Milliseconds(), leaseTimeout.Milliseconds(),
		s.opts.Retention.Milliseconds(), maxOutcomes, tok.ID, ClaimTokenTTL.Milliseconds(), repeat).Slice()
	received := time.Now()
	if err != nil {
		return Claim{}, fmt.Errorf("claim shard %d: %w", shard, err)
	}
	var c Claim
	c.Next, _ = redisTime(res[1])
	c.Now, _ = redisTime(res[2])
	ended := c.Now
	if len(res) > 3 {
		if t, ok := redisTime(res[3]); ok {
			ended = t
		}
	}
	if len(res) > 4 {
		c.Refills = int(toInt(res[4]))
	}
	flat, _ := res[0].([]any)
	var first error
	for i := 0; i+2 < len(flat); i += 3 {
		f, _ := flat[i].(string)
		v, _ := flat[i+1].(string)
		key, _, err := s.jobKeyOf(ctx, f)
		var j kairos.Job
		if err == nil {
			j, err = s.decode(key, v)
		}
		if err != nil {
			// left to its lease, which hands it out again
			first = cmp.Or(first, fmt.Errorf("claim shard %d: %w", shard, err))
			continue
		}
		cl := Claimed{Job: j, Due: fromMS(toInt(flat[i+2]))}
		if !ended.IsZero() && s.opts.Now == nil {
			cl.FireAt = received.Add(cl.Due.Sub(ended))
		}
		c.Jobs = append(c.Jobs, cl)
	}
	return c, first
}

// leaseMargin is what a claimed job's lease adds to its due time and
// callback timeout: the longest it may be held before it starts, and the
// grace after its timeout.
func (s *Store) leaseMargin() time.Duration { return s.opts.ReadyLease + s.opts.LeaseGrace }

// Release gives back claimed jobs that this process will not start: each
// keeps its due time (or waits until a later Due set by the caller, as
// flow control does) and loses no attempt. A job whose claim lapsed meanwhile
// is left alone. It returns the first error.
func (s *Store) Release(ctx context.Context, cs []Claimed) error {
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
		return []string{s.k.pool(calls[i].shard), s.k.due(calls[i].shard)}, calls[i].argv
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
