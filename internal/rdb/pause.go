package rdb

import (
	"context"
	"fmt"

	"github.com/kairos-sh/kairos"
)

// unparkBatch is how many parked entries one unpark call files again.
const unparkBatch = 1000

// PauseTopic pauses a topic (pause true) or resumes it, and returns it.
//
// Paused, the topic delivers nothing: every shard's claims park its due
// jobs (their wheel entries move to the topic's parked list) instead of
// starting attempts, so the jobs keep their state, due time and attempts;
// new jobs are accepted as usual. Jobs claimed before the pause (claims
// run up to a wheel slot ahead) and attempts in flight still finish.
// Resume files every parked job again at its own time, oldest first,
// before the topic leaves the park set.
//
// The paused set (what the topic's answer shows) says paused first, then
// the shards are told; a resume tells the shards first, and the set last. Both are idempotent: a
// call that failed midway is completed by calling it again.
func (s *Store) PauseTopic(ctx context.Context, tenant, name string, pause bool) (kairos.Topic, error) {
	t, err := s.loadTopic(ctx, tenant, name)
	if err != nil {
		return kairos.Topic{}, err
	}
	h, err := s.handle(ctx, tenant, name, true)
	if err != nil {
		return kairos.Topic{}, err
	}
	if pause {
		if err := s.setPaused(ctx, t, true); err != nil {
			return kairos.Topic{}, err
		}
		pipe := s.c.Pipeline()
		for sh := range s.k.shards {
			pipe.SAdd(ctx, s.k.parkSet(sh), h)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return kairos.Topic{}, fmt.Errorf("pause topic %s/%s: %w", tenant, name, err)
		}
		t.Paused = true
		return t, nil
	}
	for sh := range s.k.shards {
		if err := s.unpark(ctx, sh, h); err != nil {
			return kairos.Topic{}, fmt.Errorf("resume topic %s/%s: %w", tenant, name, err)
		}
	}
	if err := s.setPaused(ctx, t, false); err != nil {
		return kairos.Topic{}, err
	}
	t.Paused = false
	return t, nil
}

// unpark files topic h's parked jobs of a shard again, a batch a call, and
// takes the topic out of the shard's park set.
func (s *Store) unpark(ctx context.Context, shard int, h string) error {
	for {
		res, err := s.run(ctx, unparkScript, []string{s.k.pool(shard), s.k.due(shard), s.k.parkSet(shard), s.k.parked(shard, h)},
			s.scriptNow(), s.k.tag(shard), h, unparkBatch, WakeHorizon.Milliseconds()).Slice()
		if err != nil {
			return err
		}
		s.wakeFor(ctx, s.c, shard, res[1])
		if toInt(res[0]) == 1 {
			return nil
		}
	}
}

// setPaused adds the topic to the paused set or takes it out.
func (s *Store) setPaused(ctx context.Context, t kairos.Topic, paused bool) error {
	field := topicField(t.Tenant, t.Name)
	var err error
	if paused {
		err = s.c.SAdd(ctx, s.k.paused(), field).Err()
	} else {
		err = s.c.SRem(ctx, s.k.paused(), field).Err()
	}
	s.topics.forget(field)
	if err != nil {
		return fmt.Errorf("pause topic %s: %w", field, err)
	}
	return nil
}
