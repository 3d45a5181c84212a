package rdb

import (
	"context"
	"time"

	"github.com/kairos-sh/kairos"
)

// One-job forms of PopN, ReadyLens and StartAll, for the tests: kairos itself
// pops, measures and starts in batches.

// Pop blocks up to timeout for a topic's next ready job, on the blocking
// client.
func (s *Store) Pop(ctx context.Context, tenant, topic string, timeout time.Duration) (Popped, error) {
	ps, err := s.PopN(ctx, tenant, topic, 1, timeout)
	if err != nil {
		return Popped{}, err
	}
	return ps[0], nil
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
	jobs, err := s.StartAll(ctx, []Popped{p}, topicTimeout)
	if err != nil || len(jobs) == 0 {
		return kairos.Job{}, false, err
	}
	return jobs[0], true, nil
}
