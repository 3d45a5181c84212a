package rdb

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

// uidEncoding is lower-case base32: 15 bytes make 24 characters.
var uidEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// webhookID returns the webhook-id of the job of key created at createdMS:
// the same for every attempt of that job, another for a job created again
// under the same id (the enqueue script gives it a later creation time), and
// another in a deployment of another salt. It is derived rather than stored:
// about 48 bytes less per job in Redis.
func (s *Store) webhookID(key kairos.JobKey, createdMS int64) string {
	var buf [160]byte
	in := append(buf[:0], s.idSalt...)
	for _, p := range []string{key.Tenant, key.Topic, key.ID} {
		in = append(append(in, 0), p...)
	}
	sum := sha256.Sum256(strconv.AppendInt(append(in, 0), createdMS, 10))
	var out [4 + 24]byte
	copy(out[:], "msg_")
	uidEncoding.Encode(out[4:], sum[:15])
	return string(out[:])
}

// listpackValue is Redis's default hash-max-listpack-value: a hash whose
// values are all at most this long is kept as one compact listpack; a
// single longer value turns the whole hash into a hash table, which takes
// two to three times the memory (a 192-byte payload: 953 bytes a job
// instead of 488). Long values are therefore stored in pieces of this size,
// as fields name, name1, name2, ...
const listpackValue = 64

// maxPieces bounds the pieces of one value; a hash keeps its listpack up to
// 128 fields, and a longer value is cheaper whole.
const maxPieces = 64

// appendSplit appends field name holding v, in pieces when v is long and
// fits in at most pieces of them; longer, it is stored whole.
func appendSplit(f []any, name, v string, pieces int) []any {
	if len(v) <= listpackValue || len(v) > listpackValue*pieces {
		return append(f, name, v)
	}
	for i := 0; len(v) > 0; i++ {
		n := min(len(v), listpackValue)
		field := name
		if i > 0 {
			field = name + strconv.Itoa(i)
		}
		f = append(f, field, v[:n])
		v = v[n:]
	}
	return f
}

// joined reads field name of a job hash, putting its pieces back together.
func joined(h map[string]string, name string) string {
	v, ok := h[name+"1"]
	if !ok {
		return h[name]
	}
	var b strings.Builder
	b.WriteString(h[name])
	for i := 2; ok; i++ {
		b.WriteString(v)
		v, ok = h[name+strconv.Itoa(i)]
	}
	return b.String()
}

// urlPieces are the fields a callback URL override may take: listings read
// them by name. A URL longer than they hold is stored whole.
var urlPieces = []string{"u", "u1", "u2", "u3"}

// jobFields lists the job's own settings as hash field, value pairs. Zero
// values are left out: the job then inherits its topic's setting.
func jobFields(j kairos.Job) ([]any, error) {
	f := make([]any, 0, 20)
	add := func(name, v string) {
		if v != "" {
			f = append(f, name, v)
		}
	}
	addInt := func(name string, v int64) {
		if v != 0 {
			f = append(f, name, strconv.FormatInt(v, 10))
		}
	}
	if j.CallbackURL != "" {
		f = appendSplit(f, "u", j.CallbackURL, len(urlPieces))
	}
	add("m", j.Method)
	add("ct", j.ContentType)
	if len(j.Headers) > 0 {
		h, err := json.Marshal(j.Headers)
		if err != nil {
			return nil, fmt.Errorf("encode headers: %w", err)
		}
		f = appendSplit(f, "h", string(h), maxPieces)
	}
	f = appendSplit(f, "p", string(j.Payload), maxPieces)
	addInt("to", j.Timeout.Milliseconds())
	addInt("ma", int64(j.MaxAttempts))
	addInt("bi", j.BackoffInitial.Milliseconds())
	addInt("bm", j.BackoffMax.Milliseconds())
	return f, nil
}

// WakeHorizon is the longest a scanner sleeps, even with nothing due. A job
// due later than that needs no wake-up: the scanner looks again before then.
const WakeHorizon = 10 * time.Second

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
// that has not fired (Replaced says which). A job due now goes straight
// onto its ready list. Its Err is kairos.ErrConflict while the job is
// being delivered, and ErrNotReplicated when Options.WaitReplicas replicas
// did not confirm it. Creates made at the same moment share round trips
// (see batcher), and those of one shard and topic one script call.
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

// BatchResult is one job's outcome in EnqueueBatch and Upsert. Replaced
// is set when the job replaced one of the same id that had not fired;
// otherwise it was created.
type BatchResult struct {
	Job      kairos.Job
	Replaced bool
	Err      error
}

// EnqueueBatch enqueues jobs in one pipelined round trip per Redis node, one
// script call per shard and topic; each job gets its own result.
func (s *Store) EnqueueBatch(ctx context.Context, jobs []kairos.Job) []BatchResult {
	out := make([]BatchResult, len(jobs))
	after := s.c.Pipeline()
	for _, g := range s.writeGroups(ctx, jobs, out) {
		s.enqueueGroup(ctx, g.target, s.enqueueCalls(jobs, g.idx, out), jobs, out, after, false)
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
		m, err := cc.MasterForKey(ctx, s.k.bucket(s.k.shardOf(j.JobKey)))
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
// most maxPerCall jobs. A job whose fields cannot be encoded gets its error
// in out and is left out.
func (s *Store) enqueueCalls(jobs []kairos.Job, idx []int, out []BatchResult) []*enqueueCall {
	type group struct {
		shard         int
		tenant, topic string
	}
	open := map[group]*enqueueCall{}
	var calls []*enqueueCall
	for _, i := range idx {
		j := jobs[i]
		fields, err := jobFields(j)
		if err != nil {
			out[i].Err = err
			continue
		}
		g := group{s.k.shardOf(j.JobKey), j.Tenant, j.Topic}
		c := open[g]
		if c == nil || len(c.idx) == maxPerCall {
			c = &enqueueCall{
				shard: g.shard,
				keys: []string{s.k.bucket(g.shard), s.k.index(g.shard, j.Tenant, j.Topic),
					s.k.counters(g.shard, j.Tenant, j.Topic), s.k.dead(g.shard, j.Tenant, j.Topic),
					s.k.deadTenant(g.shard, j.Tenant), s.k.deadAll(g.shard)},
				argv: []any{s.scriptNow(), s.opts.ReadyLease.Milliseconds(), s.k.jobPrefix(g.shard),
					j.Tenant + "/" + j.Topic + "/", WakeHorizon.Milliseconds(), s.k.groupPrefix(g.shard, j.Tenant, j.Topic)},
			}
			open[g] = c
			calls = append(calls, c)
		}
		c.idx = append(c.idx, i)
		c.argv = append(c.argv, j.ID, ms(j.RunAt), len(fields)/2)
		c.argv = append(c.argv, fields...)
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
		cmds[n] = enqueueScript.EvalSha(ctx, pipe, c.keys, c.argv...)
	}
	var wait *redis.Cmd
	if s.opts.WaitReplicas > 0 {
		wait = pipe.Do(ctx, "WAIT", s.opts.WaitReplicas, s.opts.WaitTimeout.Milliseconds())
	}
	pipe.Exec(ctx)
	var missing []*enqueueCall
	for n, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") && !retried {
			missing = append(missing, calls[n]) // a restarted or promoted node lost its script cache
		}
	}
	if len(missing) > 0 {
		enqueueScript.Load(ctx, target)
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
// ready-list push of jobs due now and the scanner wake-up the call needs.
// replicaErr, when set, is every stored job's error: it is on the master,
// and its lease still hands it out if the master survives.
func (s *Store) enqueued(ctx context.Context, c *enqueueCall, res []any, jobs []kairos.Job, out []BatchResult, replicaErr error, after redis.Pipeliner) {
	results, _ := res[0].([]any)
	var now any
	if len(res) > 2 {
		now = res[2]
	}
	var push []any
	for n, i := range c.idx {
		if len(results) <= n {
			out[i].Err = fmt.Errorf("enqueue %s: short reply from Redis", jobs[i].JobKey)
			continue
		}
		// a new job: generation 1, no stored uid, created now
		r, full := results[n].([]any)
		if !full {
			r = []any{int64(1), int64(1), results[n], "", now}
		}
		if len(r) < 5 {
			out[i].Err = fmt.Errorf("enqueue %s: short reply from Redis", jobs[i].JobKey)
			continue
		}
		j := jobs[i]
		status := toInt(r[0])
		if status == -1 {
			out[i].Err = fmt.Errorf("%w: job %q is being delivered right now; try again when its attempt ends", kairos.ErrConflict, j.ID)
			continue
		}
		gen := toInt(r[1])
		j.CreatedAt = fromMS(toInt(r[4]))
		if j.UID, _ = r[3].(string); j.UID == "" {
			j.UID = s.webhookID(j.JobKey, toInt(r[4]))
		}
		j.State, j.Attempts = kairos.StateScheduled, 0
		j.RunAt = fromMS(ms(j.RunAt))
		j.NextRunAt = j.RunAt
		if toInt(r[2]) == 1 {
			j.State = kairos.StateReady
			push = append(push, readyEntry(j.ID, gen))
		}
		out[i] = BatchResult{Job: j, Replaced: status == 2, Err: replicaErr}
		if replicaErr == nil && s.opts.OnEnqueued != nil {
			s.opts.OnEnqueued(j.Tenant, j.Topic)
		}
	}
	if len(push) > 0 {
		j := jobs[c.idx[0]]
		after.LPush(ctx, s.k.ready(j.Tenant, j.Topic), push...)
	}
	if len(res) > 1 && res[1] != nil {
		s.wake(ctx, after, c.shard, toInt(res[1]))
	}
}

// push puts a claimed job onto its topic's ready list.
func (s *Store) push(ctx context.Context, tenant, topic, id string, gen int64) error {
	return s.c.LPush(ctx, s.k.ready(tenant, topic), readyEntry(id, gen)).Err()
}

func readyEntry(id string, gen int64) string { return id + "|" + strconv.FormatInt(gen, 10) }

// wake tells the scanners, through c (the client or a pipeline), that
// shard has a job due at atMS (unix ms; SubscribeWake reads the message). A
// lost message costs only latency: scanners also wake on their own.
func (s *Store) wake(ctx context.Context, c redis.Cmdable, shard int, atMS int64) {
	c.Publish(ctx, s.k.wake(), strconv.Itoa(shard)+" "+strconv.FormatInt(atMS, 10))
}

// GetJob returns a job or kairos.ErrNotFound.
func (s *Store) GetJob(ctx context.Context, key kairos.JobKey) (kairos.Job, error) {
	jk := s.k.forJob(key)
	h, err := s.c.HGetAll(ctx, jk.job).Result()
	if err != nil {
		return kairos.Job{}, fmt.Errorf("get job %s: %w", jk.member, err)
	}
	if len(h) == 0 {
		return kairos.Job{}, fmt.Errorf("job %q: %w", key.ID, kairos.ErrNotFound)
	}
	return s.decodeJob(key, h)
}

// Cancel removes a job that has not been delivered; a dead job is discarded.
func (s *Store) Cancel(ctx context.Context, key kairos.JobKey) error {
	jk := s.k.forJob(key)
	n, err := cancelScript.Run(ctx, s.c, []string{jk.bucket, jk.job, jk.index, jk.counters, jk.dead, jk.deadTen, jk.deadAll},
		jk.member, key.ID, jk.groups).Int()
	if err != nil {
		return fmt.Errorf("cancel %s: %w", jk.member, err)
	}
	switch n {
	case 0:
		return fmt.Errorf("job %q: %w", key.ID, kairos.ErrNotFound)
	case -1:
		return fmt.Errorf("%w: job %q is being delivered right now and can no longer be cancelled", kairos.ErrConflict, key.ID)
	case -2:
		return fmt.Errorf("%w: job %q was already delivered", kairos.ErrConflict, key.ID)
	}
	return nil
}

// Reschedule moves a job that has not fired to runAt.
func (s *Store) Reschedule(ctx context.Context, key kairos.JobKey, runAt time.Time) (kairos.Job, error) {
	jk := s.k.forJob(key)
	res, err := rescheduleScript.Run(ctx, s.c, []string{jk.bucket, jk.job, jk.counters}, jk.member, ms(runAt)).Slice()
	if err != nil {
		return kairos.Job{}, fmt.Errorf("reschedule %s: %w", jk.member, err)
	}
	switch toInt(res[0]) {
	case 0:
		return kairos.Job{}, fmt.Errorf("job %q: %w", key.ID, kairos.ErrNotFound)
	case -1:
		return kairos.Job{}, fmt.Errorf("%w: job %q is being delivered right now", kairos.ErrConflict, key.ID)
	case -2:
		return kairos.Job{}, fmt.Errorf("%w: job %q was already delivered; create it again to schedule a new delivery", kairos.ErrConflict, key.ID)
	case -3:
		return kairos.Job{}, fmt.Errorf("%w: job %q is dead; replay it with POST .../jobs/%s/retry", kairos.ErrConflict, key.ID, key.ID)
	}
	if toInt(res[2]) == 1 {
		s.wake(ctx, s.c, jk.shard, ms(runAt))
	}
	return s.decodeJob(key, fieldMap(res[3:]))
}

// Replay gives a dead job a fresh set of attempts and hands it out now.
func (s *Store) Replay(ctx context.Context, key kairos.JobKey) (kairos.Job, error) {
	jk := s.k.forJob(key)
	res, err := replayScript.Run(ctx, s.c, []string{jk.bucket, jk.job, jk.counters, jk.dead, jk.deadTen, jk.deadAll},
		jk.member, key.ID, ms(s.Now()), s.opts.ReadyLease.Milliseconds()).Slice()
	if err != nil {
		return kairos.Job{}, fmt.Errorf("replay %s: %w", jk.member, err)
	}
	switch toInt(res[0]) {
	case 0:
		return kairos.Job{}, fmt.Errorf("job %q: %w", key.ID, kairos.ErrNotFound)
	case -1:
		return kairos.Job{}, fmt.Errorf("%w: job %q is not dead; only dead jobs can be replayed", kairos.ErrConflict, key.ID)
	}
	// If the push fails, the lease lapses and the scanner hands the job out.
	_ = s.push(ctx, key.Tenant, key.Topic, key.ID, toInt(res[1]))
	return s.decodeJob(key, fieldMap(res[2:]))
}

// storedAttempt is an attempt as kept in a job's log: short, so that a
// delivered job's log of one attempt fits in one listpack value.
type storedAttempt struct {
	N        int     `json:"n"`
	T        int64   `json:"t,omitempty"`  // when it started, unix ms
	At       string  `json:"at,omitempty"` // the same, RFC 3339, in logs written before t
	MS       float64 `json:"ms,omitempty"`
	Status   int     `json:"status,omitempty"`
	Error    string  `json:"error,omitempty"`
	Response string  `json:"response,omitempty"`
}

func encodeAttempt(a kairos.Attempt) (string, error) {
	b, err := json.Marshal(storedAttempt{
		N: a.N, T: ms(a.At), MS: float64(a.Duration.Microseconds()) / 1000,
		Status: a.Status, Error: a.Error, Response: a.Response,
	})
	return string(b), err
}

func decodeLog(raw string) ([]kairos.Attempt, error) {
	if raw == "" || raw == "{}" {
		return nil, nil
	}
	var stored []storedAttempt
	if err := json.Unmarshal([]byte(raw), &stored); err != nil {
		return nil, fmt.Errorf("decode attempt log: %w", err)
	}
	out := make([]kairos.Attempt, len(stored))
	for i, a := range stored {
		at := fromMS(a.T)
		if a.T == 0 {
			at, _ = time.Parse(time.RFC3339Nano, a.At)
		}
		out[i] = kairos.Attempt{
			N: a.N, At: at, Duration: time.Duration(a.MS * float64(time.Millisecond)),
			Status: a.Status, Error: a.Error, Response: a.Response,
		}
	}
	return out, nil
}

// decodeJob turns a job hash into a Job.
func (s *Store) decodeJob(key kairos.JobKey, h map[string]string) (kairos.Job, error) {
	num := func(f string) int64 {
		n, _ := strconv.ParseInt(h[f], 10, 64)
		return n
	}
	j := kairos.Job{
		JobKey: key, UID: h["uid"], CallbackURL: joined(h, "u"), Method: h["m"], ContentType: h["ct"],
		Payload:        []byte(joined(h, "p")),
		Timeout:        time.Duration(num("to")) * time.Millisecond,
		MaxAttempts:    int(num("ma")),
		BackoffInitial: time.Duration(num("bi")) * time.Millisecond,
		BackoffMax:     time.Duration(num("bm")) * time.Millisecond,
		State:          kairos.State(h["st"]),
		RunAt:          fromMS(num("ra")),
		NextRunAt:      fromMS(num("ra")), // until a retry or the end sets "na"
		Attempts:       int(num("a")),
		CreatedAt:      fromMS(num("ca")),
		DoneAt:         fromMS(num("fa")),
	}
	if _, ok := h["na"]; ok {
		j.NextRunAt = fromMS(num("na"))
	}
	if j.UID == "" { // stored only by earlier versions
		j.UID = s.webhookID(key, num("ca"))
	}
	if raw := joined(h, "h"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &j.Headers); err != nil {
			return kairos.Job{}, fmt.Errorf("decode headers of %s: %w", key, err)
		}
	}
	log, err := decodeLog(joined(h, "log"))
	if err != nil {
		return kairos.Job{}, fmt.Errorf("job %s: %w", key, err)
	}
	j.Log = log
	return j, nil
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case string:
		i, _ := strconv.ParseInt(n, 10, 64)
		return i
	}
	return 0
}

func isNil(err error) bool { return errors.Is(err, redis.Nil) }
