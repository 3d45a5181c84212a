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

// ErrNoJob is returned by PopReady when nothing arrived within the timeout.
var ErrNoJob = errors.New("no job ready")

// PushReady puts claimed jobs onto their topics' ready lists, for workers
// of other processes (a process that claims but runs no workers). One
// LPUSH a topic, oldest due first out. A job whose push fails is left to
// its lease, which hands it out again.
func (s *Store) PushReady(ctx context.Context, cs []Claimed) error {
	if len(cs) == 0 {
		return nil
	}
	type topicKey struct{ tenant, topic string }
	entries := map[topicKey][]any{}
	var order []topicKey
	for _, c := range cs {
		k := topicKey{c.Job.Tenant, c.Job.Topic}
		if _, ok := entries[k]; !ok {
			order = append(order, k)
		}
		entries[k] = append(entries[k], c.Job.ID+"|"+strconv.Itoa(c.Job.Attempts)+"|"+strconv.FormatInt(ms(c.Due), 10))
	}
	pipe := s.c.Pipeline()
	for _, k := range order {
		pipe.LPush(ctx, s.k.ready(k.tenant, k.topic), entries[k]...)
		// workers elsewhere wait for this rather than block on every list
		pipe.Publish(ctx, s.k.wake(), readyPrefix+topicField(k.tenant, k.topic))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("push claimed jobs: %w", err)
	}
	return nil
}

// PopReady blocks up to timeout for a topic's ready jobs and takes up to n
// of them in one call (BLMPOP) on the blocking client, then reads them; a
// timeout of 0 takes what is there without waiting (RPOP with a count).
// Jobs whose claim is no longer current (their lease lapsed, or they were
// cancelled) are left out. A Redis without BLMPOP (before 7.0, or the
// embedded one) gets BRPOP for the first and RPOP with a count for the
// rest. It returns ErrNoJob when nothing arrived.
func (s *Store) PopReady(ctx context.Context, tenant, topic string, n int, timeout time.Duration) ([]Claimed, error) {
	key := s.k.ready(tenant, topic)
	n = max(n, 1)
	var entries []string
	var err error
	if timeout <= 0 {
		// no wait: the caller waits for a ready message (Wake.Ready) instead
		entries, err = s.c.RPopCount(ctx, key, n).Result()
	} else if !s.noBLMPop.Load() {
		_, entries, err = s.blocking.BLMPop(ctx, timeout, "RIGHT", int64(n), key).Result()
		if err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command") {
			s.noBLMPop.Store(true)
		}
	}
	if timeout > 0 && s.noBLMPop.Load() {
		entries, err = s.popEach(ctx, key, n, timeout)
	}
	if isNil(err) {
		return nil, ErrNoJob
	}
	if err != nil {
		return nil, fmt.Errorf("pop %s/%s: %w", tenant, topic, err)
	}
	h, err := s.handle(ctx, tenant, topic, false)
	if err != nil {
		return nil, err
	}
	type popped struct {
		key      kairos.JobKey
		attempts int
		due      int64
		cmd      *redis.StringCmd
	}
	pipe := s.c.Pipeline()
	ps := make([]popped, 0, len(entries))
	for _, e := range entries {
		parts := strings.Split(e, "|")
		if len(parts) != 3 {
			continue // not an entry kairos wrote
		}
		p := popped{key: kairos.JobKey{Tenant: tenant, Topic: topic, ID: parts[0]}}
		p.attempts, _ = strconv.Atoi(parts[1])
		p.due, _ = strconv.ParseInt(parts[2], 10, 64)
		p.cmd = pipe.HGet(ctx, s.k.pool(s.k.shardOf(p.key)), field(h, p.key.ID))
		ps = append(ps, p)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return nil, fmt.Errorf("read popped jobs of %s/%s: %w", tenant, topic, err)
	}
	out := make([]Claimed, 0, len(ps))
	for _, p := range ps {
		v, err := p.cmd.Result()
		if err != nil {
			continue // gone: cancelled, or expired
		}
		j, err := s.decode(p.key, v)
		if err != nil || j.State != kairos.StateActive || j.Attempts != p.attempts {
			continue // the claim lapsed and the job was handed out again, or finished
		}
		out = append(out, Claimed{Job: j, Due: fromMS(p.due)})
	}
	if len(out) == 0 {
		return nil, ErrNoJob
	}
	return out, nil
}

// popEach is PopReady's pop without BLMPOP: BRPOP waits for the first
// entry, RPOP takes up to n-1 more.
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

// Finish records attempt a of a job: with ok it is delivered; otherwise it
// retries at retryAt, or dies when dead is set. It appends the outcome to
// the shard's outcome list, and the shard's next claim applies it (in a
// batch, before it reads any lease entry), so the job reads as active
// until then: about outcomeDelay at most while a scanner holds the shard,
// which Finish wakes when the list was empty. It returns the state the
// outcome moves the job to; an outcome of a stale attempt (its lease lapsed
// and the job was handed out again) is dropped when applied.
//
// Outcomes recorded at the same moment by many callbacks share one
// pipelined round trip: the first caller waits up to outcomeLinger for
// company, and whatever others queued meanwhile go together in the next
// round trip. A caller whose ctx is marked kairos.WithPromptOutcome (it
// holds a topic's callback slot until the outcome is recorded) waits for
// no company, and ends a wait under way.
//
// A notice given with a dead outcome becomes the job's failure
// notification (kairos.NoticeID), created by the claim that records the
// outcome, in the same script: it exists exactly when the job died.
func (s *Store) Finish(ctx context.Context, key kairos.JobKey, a kairos.Attempt, ok, dead bool, retryAt time.Time, notice ...kairos.Notice) (kairos.State, error) {
	line, err := logLine(a)
	if err != nil {
		return "", err
	}
	at, err := s.locate(ctx, key)
	if err != nil {
		return "", err
	}
	outcome, state := outcomeRetrying, kairos.StateRetrying
	switch {
	case ok:
		outcome, state = outcomeDelivered, kairos.StateDelivered
	case dead:
		outcome, state = outcomeDead, kairos.StateDead
	}
	var retry string
	if outcome == outcomeRetrying {
		retry = strconv.FormatInt(ms(retryAt), 36)
	}
	entry := field(at.h, key.ID) + "," + strconv.FormatInt(int64(a.N), 36) + "," + strconv.Itoa(outcome) + "," +
		retry + "," + key.Tenant + "|" + line // logLine ends the line
	if outcome == outcomeDead && len(notice) > 0 && notice[0].URL != "" {
		set, err := encodeSettings(kairos.Job{CallbackURL: notice[0].URL, ContentType: "application/json"})
		if err != nil {
			return "", err
		}
		entry += strconv.Itoa(len(set)) + "|" + string(set) + string(notice[0].Body)
	}
	f := &finish{ctx: ctx, shard: at.shard, entry: entry, wakeAt: s.Now().Add(outcomeDelay), done: make(chan struct{})}
	if outcome == outcomeRetrying && retryAt.Before(f.wakeAt) {
		f.wakeAt = retryAt
	}
	if kairos.PromptOutcome(ctx) {
		s.finishes.doNow(f)
	} else {
		s.finishes.do(f)
	}
	if err := await(ctx, f.done); err != nil {
		return "", fmt.Errorf("finish %s attempt %d: %w", key, a.N, err)
	}
	if f.err != nil {
		return "", fmt.Errorf("finish %s attempt %d: %w", key, a.N, f.err)
	}
	return state, nil
}

// outcomeDelay is how soon after an outcome is appended the shard's scanner
// is asked to apply it: longer than a wheel slot, so that while jobs are
// due the shard's regular claims apply outcomes and they cost no claim of
// their own (measured in the precision scenario: 5,032 claim calls with
// 50 ms, 2,065 with 200 ms, and Redis CPU per job 94-100 us against 75-77).
const outcomeDelay = 200 * time.Millisecond

// outcomeLinger is how long an outcome that finds no write under way waits
// for others to share its round trip. The worker's slot is already free
// (the callback is over), and the outcome is applied by a claim up to
// outcomeDelay later anyway. At 2,000 deliveries a second, 5 ms made one
// RPUSH a delivery one per ten (dc5305f); 25 ms makes about 40 outcomes
// share a pipeline of one RPUSH a shard, and took Redis's CPU outside
// scripts in the precision scenario from 9.8-12.4 to 5.5-8.4 µs a job
// (ten runs each, alternating). A crash loses at most this much of
// outcomes not yet written: their jobs are delivered again when their
// leases lapse, as for any worker lost mid-attempt.
const outcomeLinger = 25 * time.Millisecond

// maxOutcomes bounds the outcomes one claim applies.
const maxOutcomes = 2000

// finish is one outcome waiting to be appended.
type finish struct {
	ctx    context.Context
	shard  int
	entry  string
	wakeAt time.Time

	err  error
	done chan struct{}
}

// writeFinishes appends a batch of outcomes in one pipeline, one RPUSH a
// shard, and wakes the scanners of shards whose list was empty, on the
// batch's context (batchContext).
func (s *Store) writeFinishes(batch []*finish) {
	ctx, cancel := batchContext(batch[0].ctx)
	defer cancel()
	byShard := map[int][]*finish{}
	var shards []int
	for _, f := range batch {
		if _, ok := byShard[f.shard]; !ok {
			shards = append(shards, f.shard)
		}
		byShard[f.shard] = append(byShard[f.shard], f)
	}
	entries := func(i int) []any {
		es := make([]any, len(byShard[shards[i]]))
		for k, f := range byShard[shards[i]] {
			es[k] = f.entry
		}
		return es
	}
	// A plain RPUSH costs Redis a fifth of the script that does the same
	// (measured: 1.9 against 9.0 µs a call, INFO commandstats); only a
	// Redis out of memory, which refuses the RPUSH, needs the script.
	lens, errs := make([]int64, len(shards)), make([]error, len(shards))
	pushes := make([]*redis.IntCmd, len(shards))
	pipe := s.c.Pipeline()
	for i, sh := range shards {
		pushes[i] = pipe.RPush(ctx, s.k.outcomes(sh), entries(i)...)
	}
	pipe.Exec(ctx)
	var full []int
	for i, c := range pushes {
		lens[i], errs[i] = c.Result()
		if IsOutOfMemory(errs[i]) {
			full = append(full, i)
		}
	}
	if len(full) > 0 {
		cmds := s.evalAll(ctx, outcomeScript, len(full), func(k int) ([]string, []any) {
			return []string{s.k.outcomes(shards[full[k]])}, entries(full[k])
		})
		for k, i := range full {
			lens[i], errs[i] = cmds[k].Int64()
		}
	}
	wake := s.c.Pipeline()
	for i, sh := range shards {
		n, err := lens[i], errs[i]
		if err == nil && n == int64(len(byShard[sh])) { // the list was empty: no wake-up asked yet
			wakeAt := byShard[sh][0].wakeAt
			for _, f := range byShard[sh] {
				if f.wakeAt.Before(wakeAt) {
					wakeAt = f.wakeAt
				}
			}
			s.wake(ctx, wake, sh, ms(wakeAt), true)
		}
		for _, f := range byShard[sh] {
			f.err = err
			close(f.done)
		}
	}
	if wake.Len() > 0 {
		wake.Exec(ctx)
	}
}

// RecordOutcomes applies every shard's appended outcomes now, claiming
// nothing: for tests, and for processes that stop scanning.
func (s *Store) RecordOutcomes(ctx context.Context) error {
	for sh := range s.k.shards {
		if _, err := s.ClaimDue(ctx, sh, 0, 0, time.Second); err != nil {
			return err
		}
	}
	return nil
}

// evalAll runs script n times in one pipeline, with the keys and arguments
// of call i from args. Calls a node answered NOSCRIPT (a restarted or
// promoted node lost its script cache) are run again once the script is
// loaded.
func (s *Store) evalAll(ctx context.Context, script *script, n int, args func(i int) ([]string, []any)) []*redis.Cmd {
	run := func(pipe redis.Pipeliner, i int) *redis.Cmd {
		keys, argv := args(i)
		return s.call(ctx, pipe, script, keys, argv...)
	}
	cmds := make([]*redis.Cmd, n)
	pipe := s.c.Pipeline()
	for i := range n {
		cmds[i] = run(pipe, i)
	}
	pipe.Exec(ctx)
	var retry []int
	for i, c := range cmds {
		if lostScript(c.Err()) {
			retry = append(retry, i)
		}
	}
	if len(retry) > 0 {
		s.loadScripts(ctx)
		pipe := s.c.Pipeline()
		for _, i := range retry {
			cmds[i] = run(pipe, i)
		}
		pipe.Exec(ctx)
	}
	return cmds
}
