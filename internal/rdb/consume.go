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

// ErrNoJob is returned by Pop when nothing arrived within the timeout.
var ErrNoJob = errors.New("no job ready")

// Pop blocks up to timeout for the next ready job of a topic, on the
// blocking client.
func (s *Store) Pop(ctx context.Context, tenant, topic string, timeout time.Duration) (Popped, error) {
	res, err := s.blocking.BRPop(ctx, timeout, s.k.ready(tenant, topic)).Result()
	if isNil(err) {
		return Popped{}, ErrNoJob
	}
	if err != nil {
		return Popped{}, fmt.Errorf("pop %s/%s: %w", tenant, topic, err)
	}
	entry := res[1]
	i := strings.LastIndexByte(entry, '|')
	if i < 0 {
		return Popped{}, ErrNoJob
	}
	return Popped{JobKey: kairos.JobKey{Tenant: tenant, Topic: topic, ID: entry[:i]}, Gen: entry[i+1:]}, nil
}

// Next pops a topic's next ready job and starts an attempt on it, waiting
// up to wait. ok is false when nothing arrived or the entry was stale.
func (s *Store) Next(ctx context.Context, tenant, topic string, wait, topicTimeout time.Duration) (kairos.Job, bool, error) {
	p, err := s.Pop(ctx, tenant, topic, wait)
	if errors.Is(err, ErrNoJob) {
		return kairos.Job{}, false, nil
	}
	if err != nil {
		return kairos.Job{}, false, err
	}
	return s.Start(ctx, p, topicTimeout)
}

// ReadyLens returns the ready list length of each topic, in one round trip.
func (s *Store) ReadyLens(ctx context.Context, topics []kairos.Topic) ([]int64, error) {
	pipe := s.c.Pipeline()
	cmds := make([]*redis.IntCmd, len(topics))
	for i, t := range topics {
		cmds[i] = pipe.LLen(ctx, s.k.ready(t.Tenant, t.Name))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("ready list lengths: %w", err)
	}
	out := make([]int64, len(cmds))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// ReadyLen returns the length of a topic's ready list.
func (s *Store) ReadyLen(ctx context.Context, tenant, topic string) (int64, error) {
	return s.c.LLen(ctx, s.k.ready(tenant, topic)).Result()
}

// Start begins an attempt on a popped job. topicTimeout is the callback
// timeout the job inherits when it sets none; the job's lease becomes that
// timeout plus the lease grace. ok is false when the entry is stale (the job
// was cancelled, rescheduled, or already taken): drop it.
func (s *Store) Start(ctx context.Context, p Popped, topicTimeout time.Duration) (job kairos.Job, ok bool, err error) {
	jk := s.k.forJob(p.JobKey)
	now := s.Now()
	res, err := startScript.Run(ctx, s.c, []string{jk.bucket, jk.job, jk.counters},
		jk.member, p.Gen, ms(now), topicTimeout.Milliseconds(), s.opts.LeaseGrace.Milliseconds(),
		now.UTC().Format(time.RFC3339Nano)).Slice()
	if err != nil {
		return kairos.Job{}, false, fmt.Errorf("start %s: %w", jk.member, err)
	}
	if len(res) == 0 {
		return kairos.Job{}, false, nil
	}
	job, err = decodeJob(p.JobKey, fieldMap(res[1:]))
	if err != nil {
		return kairos.Job{}, false, err
	}
	return job, true, nil
}

// Finish records attempt a of a job and returns the job's new state. With
// ok it is delivered; otherwise it retries at retryAt, or dies when dead is
// set. The result of a stale attempt (its lease lapsed and the job was
// handed out again) changes nothing and returns "".
func (s *Store) Finish(ctx context.Context, key kairos.JobKey, a kairos.Attempt, ok, dead bool, retryAt time.Time) (kairos.State, error) {
	jk := s.k.forJob(key)
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
	n, err := finishScript.Run(ctx, s.c, []string{jk.bucket, jk.job, jk.counters, jk.dead, jk.expiring},
		jk.member, key.ID, strconv.Itoa(a.N), ms(s.Now()), outcome, rec, ms(retryAt),
		int64(s.opts.Retention/time.Second)).Int()
	if err != nil {
		return "", fmt.Errorf("finish %s attempt %d: %w", jk.member, a.N, err)
	}
	if n == 2 {
		// The retry may be due before the shard's scanner plans to wake.
		s.wakeScanner(ctx, jk.shard, retryAt)
	}
	return [...]kairos.State{"", kairos.StateDelivered, kairos.StateRetrying, kairos.StateDead}[n], nil
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
