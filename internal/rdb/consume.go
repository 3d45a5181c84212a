package rdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// Popped is a ready-list entry: a job id and the schedule generation it was
// claimed for.
type Popped struct {
	kairos.JobKey
	Gen string
}

// ErrNoJob is returned by PopN when nothing arrived within the timeout.
var ErrNoJob = errors.New("no job ready")

// PopN blocks up to timeout for a topic's ready jobs and takes up to n of
// them in one call (BLMPOP), on the blocking client. A Redis without BLMPOP
// (before 7.0, or the embedded one) gets BRPOP for the first and RPOP with
// a count for the rest. It returns ErrNoJob when nothing arrived.
func (s *Store) PopN(ctx context.Context, tenant, topic string, n int, timeout time.Duration) ([]Popped, error) {
	key := s.k.ready(tenant, topic)
	n = max(n, 1)
	var entries []string
	var err error
	if !s.noBLMPop.Load() {
		_, entries, err = s.blocking.BLMPop(ctx, timeout, "RIGHT", int64(n), key).Result()
		if err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command") {
			s.noBLMPop.Store(true)
		}
	}
	if s.noBLMPop.Load() {
		entries, err = s.popEach(ctx, key, n, timeout)
	}
	if isNil(err) {
		return nil, ErrNoJob
	}
	if err != nil {
		return nil, fmt.Errorf("pop %s/%s: %w", tenant, topic, err)
	}
	out := make([]Popped, 0, len(entries))
	for _, e := range entries {
		i := strings.LastIndexByte(e, '|')
		if i < 0 {
			continue // not an entry kairos wrote
		}
		out = append(out, Popped{JobKey: kairos.JobKey{Tenant: tenant, Topic: topic, ID: e[:i]}, Gen: e[i+1:]})
	}
	if len(out) == 0 {
		return nil, ErrNoJob
	}
	return out, nil
}

// popEach is PopN without BLMPOP: BRPOP waits for the first entry, RPOP
// takes up to n-1 more.
func (s *Store) popEach(ctx context.Context, key string, n int, timeout time.Duration) ([]string, error) {
	first, err := s.blocking.BRPop(ctx, timeout, key).Result()
	if err != nil {
		return nil, err
	}
	entries := first[1:]
	if n > 1 {
		more, err := s.blocking.RPopCount(ctx, key, n-1).Result()
		if err != nil && !isNil(err) {
			return entries, nil // the rest stays on the list for the next pop
		}
		entries = append(entries, more...)
	}
	return entries, nil
}

// Next pops up to n of a topic's ready jobs, waiting up to wait, and
// starts an attempt on each in one pipelined round trip. Stale entries are
// dropped, so it may return fewer jobs than it popped, or none.
//
// What it popped, it starts even when ctx ended during the pop (a worker
// told to stop): popped entries are off their list, and dropping them would
// leave the jobs to their ready lease.
func (s *Store) Next(ctx context.Context, tenant, topic string, n int, wait, topicTimeout time.Duration) ([]kairos.Job, error) {
	ps, err := s.PopN(ctx, tenant, topic, n, wait)
	if errors.Is(err, ErrNoJob) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.StartAll(context.WithoutCancel(ctx), ps, topicTimeout)
}

// ReadyLens returns the ready list length of each topic, in one round trip.
func (s *Store) ReadyLens(ctx context.Context, topics []kairos.Topic) ([]int64, error) {
	out, err := s.ints(ctx, len(topics), func(pipe redis.Pipeliner, i int) *redis.IntCmd {
		return pipe.LLen(ctx, s.k.ready(topics[i].Tenant, topics[i].Name))
	})
	if err != nil {
		return nil, fmt.Errorf("ready list lengths: %w", err)
	}
	return out, nil
}

// ints runs n integer commands in one pipeline and returns their values.
func (s *Store) ints(ctx context.Context, n int, cmd func(pipe redis.Pipeliner, i int) *redis.IntCmd) ([]int64, error) {
	pipe := s.c.Pipeline()
	cmds := make([]*redis.IntCmd, n)
	for i := range n {
		cmds[i] = cmd(pipe, i)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]int64, n)
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// StartAll starts attempts on popped jobs in one pipelined round trip and
// returns the jobs started. topicTimeout is the callback timeout a job
// inherits when it sets none; its lease becomes that timeout plus the lease
// grace. Stale entries (the job was cancelled, rescheduled, or already
// taken) are left out. A job whose start failed is left to its lease, which
// hands it out again; the first error is returned with the jobs that did
// start.
func (s *Store) StartAll(ctx context.Context, ps []Popped, topicTimeout time.Duration) ([]kairos.Job, error) {
	now := s.Now()
	nowMS := ms(now)
	cmds := s.evalAll(ctx, startScript, len(ps), func(i int) ([]string, []any) {
		jk := s.k.forJob(ps[i].JobKey)
		return []string{jk.bucket, jk.job, jk.counters},
			[]any{jk.member, ps[i].Gen, nowMS, topicTimeout.Milliseconds(), s.opts.LeaseGrace.Milliseconds()}
	})
	jobs := make([]kairos.Job, 0, len(ps))
	var first error
	for i, c := range cmds {
		res, err := c.Slice()
		if err == nil && len(res) == 0 {
			continue // stale
		}
		var job kairos.Job
		if err == nil {
			job, err = s.decodeJob(ps[i].JobKey, fieldMap(res[1:]))
		}
		if err != nil {
			if first == nil {
				first = fmt.Errorf("start %s: %w", ps[i].JobKey, err)
			}
			continue
		}
		jobs = append(jobs, job)
	}
	return jobs, first
}

// Finish records attempt a of a job and returns the job's new state. With
// ok it is delivered; otherwise it retries at retryAt, or dies when dead is
// set. The result of a stale attempt (its lease lapsed and the job was
// handed out again) changes nothing and returns "".
//
// Outcomes recorded at the same moment by many callbacks share one
// pipelined round trip: the first caller writes its own, and whatever
// others queued meanwhile go together in the next round trip. An idle
// worker pays no delay for this.
func (s *Store) Finish(ctx context.Context, key kairos.JobKey, a kairos.Attempt, ok, dead bool, retryAt time.Time) (kairos.State, error) {
	rec, err := encodeAttempt(a)
	if err != nil {
		return "", err
	}
	outcome := "retry"
	switch {
	case ok:
		outcome = "ok"
	case dead:
		outcome = "dead"
	}
	f := &finish{ctx: ctx, key: key, n: a.N, outcome: outcome, rec: rec, retryAt: retryAt, done: make(chan struct{})}
	s.finishes.do(f)
	if err := await(ctx, f.done); err != nil {
		return "", fmt.Errorf("finish %s attempt %d: %w", key, a.N, err)
	}
	if f.err != nil {
		return "", fmt.Errorf("finish %s attempt %d: %w", key, a.N, f.err)
	}
	return f.state, nil
}

// finish is one outcome waiting to be written.
type finish struct {
	ctx     context.Context
	key     kairos.JobKey
	n       int
	outcome string
	rec     string
	retryAt time.Time

	state kairos.State
	err   error
	done  chan struct{}
}

// writeFinishes runs the finish scripts of a batch in one pipeline, on the
// batch's context (batchContext).
func (s *Store) writeFinishes(batch []*finish) {
	ctx, cancel := batchContext(batch[0].ctx)
	defer cancel()
	now := ms(s.Now())
	retention := int64(s.opts.Retention / time.Second)
	cmds := s.evalAll(ctx, finishScript, len(batch), func(i int) ([]string, []any) {
		f := batch[i]
		jk := s.k.forJob(f.key)
		return []string{jk.bucket, jk.job, jk.counters, jk.dead, jk.expiring, jk.deadTen, jk.deadAll},
			[]any{jk.member, f.key.ID, strconv.Itoa(f.n), now, f.outcome, f.rec, ms(f.retryAt), retention}
	})
	wake := s.c.Pipeline()
	for i, f := range batch {
		n, err := cmds[i].Int()
		f.err = err
		if err == nil {
			f.state = [...]kairos.State{"", kairos.StateDelivered, kairos.StateRetrying, kairos.StateDead}[n]
			if n == 2 {
				// The retry may be due before the shard's scanner plans to wake.
				s.wake(ctx, wake, s.k.shardOf(f.key), ms(f.retryAt))
			}
		}
		close(f.done)
	}
	if wake.Len() > 0 {
		wake.Exec(ctx)
	}
}

// fieldMap turns a script's flat field, value, ... reply into a map.
func fieldMap(flat []any) map[string]string {
	h := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		v, _ := flat[i+1].(string)
		h[k] = v
	}
	return h
}

// evalAll runs script n times in one pipeline, with the keys and arguments
// of call i from args. Calls a node answered NOSCRIPT (a restarted or
// promoted node lost its script cache) are run again once the script is
// loaded.
func (s *Store) evalAll(ctx context.Context, script *redis.Script, n int, args func(i int) ([]string, []any)) []*redis.Cmd {
	run := func(pipe redis.Pipeliner, i int) *redis.Cmd {
		keys, argv := args(i)
		return script.EvalSha(ctx, pipe, keys, argv...)
	}
	cmds := make([]*redis.Cmd, n)
	pipe := s.c.Pipeline()
	for i := range n {
		cmds[i] = run(pipe, i)
	}
	pipe.Exec(ctx)
	var retry []int
	for i, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			retry = append(retry, i)
		}
	}
	if len(retry) > 0 {
		script.Load(ctx, s.c)
		pipe := s.c.Pipeline()
		for _, i := range retry {
			cmds[i] = run(pipe, i)
		}
		pipe.Exec(ctx)
	}
	return cmds
}
