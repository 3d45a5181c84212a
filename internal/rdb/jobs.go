package rdb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

// decode turns a stored record of key into a Job.
func (s *Store) decode(key kairos.JobKey, v string) (kairos.Job, error) {
	r, err := decodeRecord(v)
	if err != nil {
		return kairos.Job{}, fmt.Errorf("job %s: %w", key, err)
	}
	return r.job(key, s.webhookID)
}

// jobAt is where a job lives: its shard, its topic's handle, its pool field.
type jobAt struct {
	shard int
	h     string
	field string
}

// locate finds key's place; a topic that never had a job is ErrNotFound.
func (s *Store) locate(ctx context.Context, key kairos.JobKey) (jobAt, error) {
	h, err := s.handle(ctx, key.Tenant, key.Topic, false)
	if err != nil {
		if errors.Is(err, kairos.ErrNotFound) {
			return jobAt{}, fmt.Errorf("job %q: %w", key.ID, kairos.ErrNotFound)
		}
		return jobAt{}, err
	}
	return jobAt{shard: s.k.shardOf(key), h: h, field: field(h, key.ID)}, nil
}

// GetJob returns a job or kairos.ErrNotFound.
func (s *Store) GetJob(ctx context.Context, key kairos.JobKey) (kairos.Job, error) {
	at, err := s.locate(ctx, key)
	if err != nil {
		return kairos.Job{}, err
	}
	v, err := s.c.HGet(ctx, s.k.pool(at.shard), at.field).Result()
	if isNil(err) {
		return kairos.Job{}, fmt.Errorf("job %q: %w", key.ID, kairos.ErrNotFound)
	}
	if err != nil {
		return kairos.Job{}, fmt.Errorf("get job %s: %w", key, err)
	}
	return s.decode(key, v)
}

// Cancel cancels a job that has not been delivered: it stays readable in
// state cancelled, with its history, for the retention period, as a
// delivered job does; a dead one leaves the dead letters. Cancelling a job
// already cancelled changes nothing. Cancelling a schedule's pending
// occurrence skips it: the schedule's next instant becomes pending.
func (s *Store) Cancel(ctx context.Context, key kairos.JobKey) error {
	at, err := s.locate(ctx, key)
	if err != nil {
		return err
	}
	res, err := s.run(ctx, cancelScript, s.jobKeys(at.shard), s.k.tag(at.shard), at.h, key.ID, key.Tenant,
		s.scriptNow(), WakeHorizon.Milliseconds(), s.opts.Retention.Milliseconds()).Slice()
	if err != nil {
		return fmt.Errorf("cancel %s: %w", key, err)
	}
	switch toInt(res[0]) {
	case replyNotFound:
		return fmt.Errorf("job %q: %w", key.ID, kairos.ErrNotFound)
	case replyActive:
		return fmt.Errorf("%w: job %q is being delivered right now and can no longer be cancelled", kairos.ErrConflict, key.ID)
	case replyDelivered:
		return fmt.Errorf("%w: job %q was already delivered", kairos.ErrConflict, key.ID)
	}
	s.wakeFor(ctx, s.c, at.shard, res[1])
	return nil
}

// jobKeys are the keys of the scripts that change one job: a cancel or
// reschedule of a schedule's pending occurrence files the schedule's next.
func (s *Store) jobKeys(shard int) []string {
	return []string{s.k.pool(shard), s.k.due(shard), s.k.schedules(shard), s.k.refills(shard)}
}

// Reschedule moves a job that has not fired, or waits to retry, to runAt;
// it keeps its attempts (a retrying job stays retrying). A schedule's pending
// occurrence moved fires once at runAt, outside its schedule, which files
// its next instant as the pending one.
func (s *Store) Reschedule(ctx context.Context, key kairos.JobKey, runAt time.Time) (kairos.Job, error) {
	if err := checkRecord(dueMS(runAt), 0, 0); err != nil {
		return kairos.Job{}, fmt.Errorf("reschedule %s: %w", key, err)
	}
	at, err := s.locate(ctx, key)
	if err != nil {
		return kairos.Job{}, err
	}
	res, err := s.run(ctx, rescheduleScript, s.jobKeys(at.shard),
		s.k.tag(at.shard), at.h, key.ID, dueMS(runAt), ms(s.Now()), WakeHorizon.Milliseconds()).Slice()
	if err != nil {
		return kairos.Job{}, fmt.Errorf("reschedule %s: %w", key, err)
	}
	switch toInt(res[0]) {
	case replyNotFound:
		return kairos.Job{}, fmt.Errorf("job %q: %w", key.ID, kairos.ErrNotFound)
	case replyActive:
		return kairos.Job{}, fmt.Errorf("%w: job %q is being delivered right now", kairos.ErrConflict, key.ID)
	case replyDelivered:
		return kairos.Job{}, fmt.Errorf("%w: job %q was already delivered; create it again to schedule a new delivery", kairos.ErrConflict, key.ID)
	case replyDead:
		return kairos.Job{}, fmt.Errorf("%w: job %q is dead or expired; replay it with POST .../jobs/%s/retry", kairos.ErrConflict, key.ID, key.ID)
	case replyCancelled:
		return kairos.Job{}, fmt.Errorf("%w: job %q was cancelled; create it again to schedule a new delivery", kairos.ErrConflict, key.ID)
	}
	s.wakeFor(ctx, s.c, at.shard, res[1])
	v, _ := res[2].(string)
	return s.decode(key, v)
}

// Replay gives a dead or expired job a fresh set of attempts, due now; an
// expired one loses its expiry.
func (s *Store) Replay(ctx context.Context, key kairos.JobKey) (kairos.Job, error) {
	at, err := s.locate(ctx, key)
	if err != nil {
		return kairos.Job{}, err
	}
	res, err := s.run(ctx, replayScript, []string{s.k.pool(at.shard), s.k.due(at.shard)},
		s.k.tag(at.shard), at.h, key.ID, ms(s.Now()), key.Tenant).Slice()
	if err != nil {
		return kairos.Job{}, fmt.Errorf("replay %s: %w", key, err)
	}
	switch toInt(res[0]) {
	case replyNotFound:
		return kairos.Job{}, fmt.Errorf("job %q: %w", key.ID, kairos.ErrNotFound)
	case replyNotDead:
		return kairos.Job{}, fmt.Errorf("%w: job %q is not dead or expired; only those can be replayed", kairos.ErrConflict, key.ID)
	}
	s.wakeFor(ctx, s.c, at.shard, res[1])
	v, _ := res[2].(string)
	return s.decode(key, v)
}

// wakeFor wakes the shard's scanner, through c (the client or a
// pipeline), when a script answered an earliest slot (a string of unix ms)
// rather than false.
func (s *Store) wakeFor(ctx context.Context, c redis.Cmdable, shard int, earliest any) {
	if at, ok := redisTime(earliest); ok {
		s.wake(ctx, c, shard, ms(at))
	}
}

// redisTime reads a time a script answered as a string of unix ms, with or
// without a fraction (the microseconds of Redis's TIME); false is no time.
func redisTime(v any) (time.Time, bool) {
	str, ok := v.(string)
	if !ok {
		return time.Time{}, false
	}
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMicro(int64(math.Round(f * 1000))).UTC(), true
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
