package rdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kairos-sh/kairos"
)

// BackfillSchedule fires each of the given instants of schedule id (as
// the occurrences' ids name them, ascending) that has not fired: one whose
// occurrence's job exists (fired by the pattern, a trigger or an earlier
// backfill, and kept for the retention period; or pending) does not fire
// again, and neither do instants from the pending occurrence on or after
// now, which the pattern fires itself. It returns how many it filed; a
// schedule that fired its max_runs is kairos.ErrConflict.
func (s *Store) BackfillSchedule(ctx context.Context, tenant, topic, id string, instants []time.Time) (int, error) {
	shard, h, err := s.scheduleAt(ctx, tenant, topic, id, false)
	if err != nil {
		return 0, scheduleNotFound(id, err)
	}
	argv := make([]any, 0, 5+len(instants))
	argv = append(argv, s.scriptNow(), s.k.tag(shard), h, id, WakeHorizon.Milliseconds())
	for _, t := range instants {
		argv = append(argv, ms(t))
	}
	res, err := s.run(ctx, schedfillScript, []string{s.k.pool(shard), s.k.due(shard), s.k.schedules(shard), s.k.gone(shard)}, argv...).Slice()
	if err != nil {
		return 0, fmt.Errorf("backfill schedule %s: %w", id, err)
	}
	switch toInt(res[0]) {
	case replyNotFound:
		return 0, fmt.Errorf("schedule %q: %w", id, kairos.ErrNotFound)
	case replyTopicGone:
		return 0, errTopicGone(topic)
	case replyCompleted:
		return 0, fmt.Errorf("%w: schedule %q fired its max_runs: it is completed and fires no more", kairos.ErrConflict, id)
	}
	filed, last := int(toInt(res[1])), toInt(res[2])
	s.wakeFor(ctx, s.c, shard, res[3])
	if filed == 0 {
		return 0, nil
	}
	if err := s.markBackfilled(ctx, shard, field(h, id), last); err != nil {
		// the occurrences are filed and fire; only last_run misses them
		return filed, fmt.Errorf("schedule %s: record the backfill for last_run: %w", id, err)
	}
	return filed, nil
}

// markBackfilled records at as the latest instant of the last backfill
// of schedule f, in its meta (schedmark.lua); a put, pause or resume
// between its read and its write makes it read again.
func (s *Store) markBackfilled(ctx context.Context, shard int, f string, at int64) error {
	for range 5 {
		pipe := s.c.TxPipeline()
		head, body := s.getSchedule(ctx, pipe, shard, f)
		if _, err := pipe.Exec(ctx); err != nil {
			if isNil(err) {
				return nil // deleted meanwhile
			}
			return err
		}
		r, err := decodeSchedule(head.Val(), body.Val())
		if err != nil {
			return err
		}
		var m scheduleMeta
		if err := json.Unmarshal(r.meta, &m); err != nil {
			return fmt.Errorf("decode meta: %w", err)
		}
		m.Backfilled, m.BackfilledAt = at, ms(s.Now())
		meta, err := json.Marshal(m)
		if err != nil {
			return err
		}
		switch n, err := s.run(ctx, schedmarkScript, []string{s.k.schedules(shard), s.k.scheduleBodies(shard)}, f, r.gen, string(meta)).Int(); {
		case err != nil:
			return err
		case n != replyReplaced:
			return nil
		}
	}
	return fmt.Errorf("%w: schedule %q changed five times while its backfill was recorded", kairos.ErrConflict, f)
}
