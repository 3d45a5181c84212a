package rdb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

// WakeHorizon is the longest a scanner sleeps, even with nothing due. A job
// due later than that needs no wake-up: the scanner looks again before then.
// Otherwise a scanner sleeps until its shard's earliest wheel slot, and a
// write that makes an earlier slot the first wakes it (wake), so the
// horizon bounds only what a lost wake message can cost; each of its
// shard's looks costs an idle process about six Redis commands.
const WakeHorizon = 30 * time.Minute

// maxPerCall bounds the jobs of one enqueue script call, so that a call
// holds Redis for about a millisecond at most.
const maxPerCall = 200

// Enqueue is Upsert for callers that need not know whether the job was
// created or replaced.
func (s *Store) Enqueue(ctx context.Context, j kairos.Job) (kairos.Job, error) {
	r := s.Upsert(ctx, j)
	return r.Job, r.Err
}

// Upsert creates the job, or replaces and reschedules a job of the same id
// that has not fired (Replaced says which). Its Err is kairos.ErrConflict
// while the job is being delivered, and ErrNotReplicated when
// Options.WaitReplicas replicas did not confirm it. Creates made at the
// same moment share round trips (see batcher), and those of one shard and
// topic one script call.
func (s *Store) Upsert(ctx context.Context, j kairos.Job) BatchResult {
	c := &create{ctx: ctx, job: j, done: make(chan struct{})}
	s.creates.do(c)
	if err := await(ctx, c.done); err != nil {
		return BatchResult{Err: fmt.Errorf("enqueue %s: %w", j.JobKey, err)}
	}
	return c.res
}

// create is a single create waiting to be written.
type create struct {
	ctx  context.Context
	job  kairos.Job
	res  BatchResult
	done chan struct{}
}

// writeCreates writes queued single creates as one batch, on the batch's
// context (batchContext).
func (s *Store) writeCreates(batch []*create) {
	ctx, cancel := batchContext(batch[0].ctx)
	defer cancel()
	jobs := make([]kairos.Job, len(batch))
	for i, c := range batch {
		jobs[i] = c.job
	}
	for i, r := range s.EnqueueBatch(ctx, jobs) {
		batch[i].res = r
		close(batch[i].done)
	}
}

// BatchResult is one item's outcome in EnqueueBatch: what the create did
// (Result, when Err is nil) and the job it left, which for ResultKept and
// ResultDuplicate is the stored one. A duplicate whose job's record is gone
// (cancelled, or past its retention) has a Job of its key alone, no State.
type BatchResult struct {
	Job    kairos.Job
	Result CreateResult
	Err    error
}

// CreateResult says what a create did; the API shows it as "result".
type CreateResult string

const (
	ResultCreated   CreateResult = "created"   // a new job
	ResultReplaced  CreateResult = "replaced"  // a job of the id that had not fired, replaced
	ResultKept      CreateResult = "kept"      // on_conflict keep: the job of the id, unchanged
	ResultDebounced CreateResult = "debounced" // on_conflict debounce: replaced, its time bounded
	ResultDuplicate CreateResult = "duplicate" // within its dedup key's window: nothing written
)

// Replaced reports whether the create found a job of its id that had not
// fired, and replaced it (a debounce included).
func (r BatchResult) Replaced() bool {
	return r.Result == ResultReplaced || r.Result == ResultDebounced
}

// DedupID returns a new id, drawn from newID, for a create of tenant's
// topic with dedup key key: one that puts the job in the key's shard, so
// that one script checks the key and creates the job (layout.go, "Dedup
// keys"). It draws about as many ids as there are shards.
func (s *Store) DedupID(tenant, topic, key string, newID func() string) string {
	want := s.k.dedupShard(tenant, topic, key)
	for {
		id := newID()
		if s.k.shardOf(kairos.JobKey{Tenant: tenant, Topic: topic, ID: id}) == want {
			return id
		}
	}
}

// createOpt is a create's option as enqueue.lua takes it, empty to replace.
func createOpt(o kairos.CreateOptions) string {
	switch {
	case o.DedupKey != "":
		w := o.DedupWindow
		if w <= 0 {
			w = kairos.DefaultDedupWindow
		}
		return "u" + strconv.FormatInt(w.Milliseconds(), 10) + ":" + o.DedupKey
	case o.OnConflict == kairos.ConflictKeep:
		return "k"
	case o.OnConflict == kairos.ConflictDebounce:
		return "b" + strconv.FormatInt(o.MaxDelay.Milliseconds(), 10)
	}
	return ""
}

// EnqueueBatch enqueues jobs in one pipelined round trip per Redis node, one
// script call per shard and topic; each job gets its own result.
func (s *Store) EnqueueBatch(ctx context.Context, jobs []kairos.Job) []BatchResult {
	out := make([]BatchResult, len(jobs))
	after := s.c.Pipeline()
	for _, g := range s.writeGroups(ctx, jobs, out) {
		s.enqueueGroup(ctx, g.target, s.enqueueCalls(ctx, jobs, g.idx, out), jobs, out, after, false)
	}
	if after.Len() > 0 {
		after.Exec(ctx)
	}
	return out
}

// writeGroup is a set of jobs written through one pipeline.
type writeGroup struct {
	target redis.Cmdable
	idx    []int
}

// writeGroups splits jobs by the pipeline that writes them. Waiting for
// replicas (WAIT) counts only the writes of its own connection, so with
// WaitReplicas on a cluster each master gets a pipeline of its own.
func (s *Store) writeGroups(ctx context.Context, jobs []kairos.Job, out []BatchResult) []writeGroup {
	cc, cluster := s.c.(*redis.ClusterClient)
	if !cluster || s.opts.WaitReplicas <= 0 {
		g := writeGroup{target: s.c, idx: make([]int, len(jobs))}
		for i := range jobs {
			g.idx[i] = i
		}
		return []writeGroup{g}
	}
	byMaster := map[*redis.Client]*writeGroup{}
	var order []*redis.Client
	for i, j := range jobs {
		m, err := cc.MasterForKey(ctx, s.k.pool(s.k.shardOf(j.JobKey)))
		if err != nil {
			out[i].Err = fmt.Errorf("enqueue %s: find its master: %w", j.JobKey, err)
			continue
		}
		if byMaster[m] == nil {
			byMaster[m] = &writeGroup{target: m}
			order = append(order, m)
		}
		byMaster[m].idx = append(byMaster[m].idx, i)
	}
	groups := make([]writeGroup, len(order))
	for i, m := range order {
		groups[i] = *byMaster[m]
	}
	return groups
}

// enqueueCall is one enqueue script call: jobs of one shard and topic.
type enqueueCall struct {
	shard int
	idx   []int // the jobs, as indexes into the caller's slice
	keys  []string
	argv  []any
}

// enqueueCalls groups jobs idx by shard and topic into script calls of at
// most maxPerCall jobs. A job whose settings cannot be encoded, that does
// not fit its record (checkRecord), or whose topic's handle cannot be read
// gets its error in out and is left out.
func (s *Store) enqueueCalls(ctx context.Context, jobs []kairos.Job, idx []int, out []BatchResult) []*enqueueCall {
	type group struct {
		shard         int
		tenant, topic string
		opt           bool // jobs with a create option: a value more each
	}
	open := map[group]*enqueueCall{}
	var calls []*enqueueCall
	for _, i := range idx {
		j := jobs[i]
		set, err := encodeSettings(j)
		if err == nil {
			err = checkRecord(dueMS(j.RunAt), j.Timeout.Milliseconds(), len(set))
		}
		if err == nil && j.Create.DedupKey != "" && s.k.shardOf(j.JobKey) != s.k.dedupShard(j.Tenant, j.Topic, j.Create.DedupKey) {
			err = errors.New("a create with a dedup key needs an id from DedupID")
		}
		if err != nil {
			out[i].Err = fmt.Errorf("enqueue %s: %w", j.JobKey, err)
			continue
		}
		opt := createOpt(j.Create)
		g := group{s.k.shardOf(j.JobKey), j.Tenant, j.Topic, opt != ""}
		c := open[g]
		if c == nil || len(c.idx) == maxPerCall {
			h, err := s.handle(ctx, j.Tenant, j.Topic, true)
			if err != nil {
				out[i].Err = err
				continue
			}
			c = &enqueueCall{
				shard: g.shard,
				keys:  []string{s.k.pool(g.shard), s.k.due(g.shard), s.k.gone(g.shard)},
				argv:  []any{s.scriptNow(), s.k.tag(g.shard), h, WakeHorizon.Milliseconds(), j.Tenant, 5},
			}
			open[g] = c
			calls = append(calls, c)
		}
		c.idx = append(c.idx, i)
		c.argv = append(c.argv, j.ID, dueMS(j.RunAt), j.Timeout.Milliseconds(), len(set), string(set)+string(j.Payload))
		if g.opt {
			c.argv[5] = 6
			c.argv = append(c.argv, opt)
		}
	}
	return calls
}

// enqueueGroup runs the calls in one pipeline, followed by WAIT when
// replicas must confirm, and records each job's result.
func (s *Store) enqueueGroup(ctx context.Context, target redis.Cmdable, calls []*enqueueCall, jobs []kairos.Job, out []BatchResult, after redis.Pipeliner, retried bool) {
	if len(calls) == 0 {
		return
	}
	pipe := target.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for n, c := range calls {
		cmds[n] = s.call(ctx, pipe, enqueueScript, c.keys, c.argv...)
	}
	var wait *redis.Cmd
	var repl *redis.StringCmd
	if s.opts.WaitReplicas > 0 {
		wait = pipe.Do(ctx, "WAIT", s.opts.WaitReplicas, s.opts.WaitTimeout.Milliseconds())
		repl = pipe.Info(ctx, "replication") // which replicas confirmed: see ReplicaLeftGrace
	}
	pipe.Exec(ctx)
	var missing []*enqueueCall
	for n, c := range cmds {
		if lostScript(c.Err()) && !retried {
			missing = append(missing, calls[n]) // a restarted or promoted node lost its scripts
		}
	}
	if len(missing) > 0 {
		s.loadScripts(ctx)
		s.enqueueGroup(ctx, target, missing, jobs, out, after, true)
	}
	var replicaErr error
	if wait != nil {
		n, err := wait.Int64()
		switch {
		case err != nil:
			replicaErr = fmt.Errorf("%w: %v", ErrNotReplicated, err)
		case n < int64(s.opts.WaitReplicas):
			replicaErr = fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, n, s.opts.WaitReplicas, s.opts.WaitTimeout)
		case repl.Err() != nil:
			replicaErr = fmt.Errorf("%w: %v", ErrNotReplicated, repl.Err())
		default:
			replicaErr = s.replicas.check(repl.Val(), time.Now())
		}
	}
	for n, c := range cmds {
		if slices.Contains(missing, calls[n]) {
			continue
		}
		res, err := c.Slice()
		if err != nil {
			for _, i := range calls[n].idx {
				out[i].Err = fmt.Errorf("enqueue %s: %w", jobs[i].JobKey, err)
			}
			continue
		}
		s.enqueued(ctx, calls[n], res, jobs, out, replicaErr, after)
	}
}

// enqueued reads an enqueue call's reply into out, and queues on after the
// scanner wake-up the call needs. replicaErr, when set, is every stored
// job's error: it is on the master, and fires if the master survives.
func (s *Store) enqueued(ctx context.Context, c *enqueueCall, res []any, jobs []kairos.Job, out []BatchResult, replicaErr error, after redis.Pipeliner) {
	if len(res) == 1 && toInt(res[0]) == replyTopicGone {
		for _, i := range c.idx {
			out[i].Err = errTopicGone(jobs[i].Topic)
		}
		return
	}
	results, _ := res[0].([]any)
	now, _ := redisTime(res[2])
	nowMS := ms(now)
	for n, i := range c.idx {
		if len(results) <= n {
			out[i].Err = fmt.Errorf("enqueue %s: short reply from Redis", jobs[i].JobKey)
			continue
		}
		j := jobs[i]
		code, created, r := results[n], nowMS, []any(nil)
		if r, _ = results[n].([]any); len(r) >= 2 {
			code, created = r[0], toInt(r[1])
		}
		result := ResultCreated
		switch toInt(code) {
		case replyActive:
			out[i].Err = fmt.Errorf("%w: job %q is being delivered right now; try again when its attempt ends", kairos.ErrConflict, j.ID)
			continue
		case replyKept, replyDuplicate:
			out[i] = s.stored(j, r)
			if out[i].Err == nil {
				out[i].Err = replicaErr // the job found may not have reached them either
			}
			continue
		case replyOK:
		case replyReplaced:
			result = ResultReplaced
		case replyDebounced:
			result = ResultDebounced
			if len(r) == 3 {
				j.RunAt = fromMS(toInt(r[2])) // bounded by max_delay
			}
		default:
			out[i].Err = fmt.Errorf("enqueue %s: unexpected reply %v from Redis", j.JobKey, code)
			continue
		}
		j.CreatedAt = fromMS(created)
		j.UID = s.webhookID(j.JobKey, created)
		j.State, j.Attempts, j.Log = kairos.StateScheduled, 0, nil
		if dueMS(j.RunAt) <= nowMS {
			j.State = kairos.StateReady // due: waiting for a claim
		}
		j.RunAt = fromMS(dueMS(j.RunAt))
		j.NextRunAt = j.RunAt
		out[i] = BatchResult{Job: j, Result: result, Err: replicaErr}
		if replicaErr == nil && s.opts.OnEnqueued != nil {
			s.opts.OnEnqueued(j.Tenant, j.Topic)
		}
	}
	s.wakeFor(ctx, after, c.shard, res[1])
}

// stored is the result of a create that wrote nothing: {R.kept, record}
// or {R.duplicate, first id, record or false}; the job is the stored one.
func (s *Store) stored(j kairos.Job, r []any) BatchResult {
	res := BatchResult{Result: ResultKept}
	v := r[1]
	if toInt(r[0]) == replyDuplicate {
		res.Result = ResultDuplicate
		j.ID, _ = r[1].(string)
		v = nil
		if len(r) > 2 {
			v = r[2]
		}
	}
	rec, ok := v.(string)
	if !ok { // a duplicate of a job whose record is gone: its key is all we know
		res.Job = kairos.Job{JobKey: j.JobKey}
		return res
	}
	res.Job, res.Err = s.decode(j.JobKey, rec)
	return res
}

// errTopicGone is the error of a write into a deleted topic.
func errTopicGone(topic string) error {
	return fmt.Errorf("topic %q was deleted: %w", topic, kairos.ErrNotFound)
}
