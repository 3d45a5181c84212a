package rdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

// Counters are a topic's counters (layout.go, "Counters"): its jobs by
// state, and what its schedules' occurrences did.
type Counters struct {
	States      map[kairos.State]int64 // every state, 0 included
	Occurrences Occurrences
}

// Occurrences count a topic's schedule occurrences (jobs whose id is
// "<schedule id>@<unix ms>", triggered ones included) since the topic's
// first job. They only grow. Fired less Delivered less Dead is the
// occurrences between their first attempt and their end.
type Occurrences struct {
	// Fired counts claims for a first attempt: the one that files the
	// schedule's next occurrence, in the same script. A dead occurrence
	// replayed fires again; one dropped by catch_up "none" never fired; a
	// claim given back unstarted (Release) is taken off.
	Fired     int64
	Delivered int64 // answered 2xx
	Dead      int64 // failed their last attempt
	// Skipped counts instants that did not fire because the previous
	// occurrence was still active or retrying (overlap skip, buffer_one).
	Skipped int64
}

// add adds counter field f, holding n.
func (c *Counters) add(f string, n int64) {
	f, occ := strings.CutPrefix(f, occurrenceMark)
	if occ && f == occurrenceSkipped {
		c.Occurrences.Skipped += n
		return
	}
	from, to, moved := strings.Cut(f, ">")
	if !moved {
		c.States[kairos.State(f)] += n
		return
	}
	c.States[kairos.State(from)] -= n
	c.States[kairos.State(to)] += n
	if !occ {
		return
	}
	switch kairos.State(to) {
	case kairos.StateActive:
		c.Occurrences.Fired += n
	case kairos.StateScheduled, kairos.StateReady: // given back unstarted
		c.Occurrences.Fired -= n
	case kairos.StateDelivered:
		c.Occurrences.Delivered += n
	case kairos.StateDead:
		c.Occurrences.Dead += n
	}
}

// TopicCounters sums a topic's per-shard counters: one HGETALL a shard, in
// one pipeline. The counters are kept by the scripts that change states;
// nothing here scans jobs.
func (s *Store) TopicCounters(ctx context.Context, tenant, topic string) (Counters, error) {
	c := Counters{States: make(map[kairos.State]int64, len(kairos.States))}
	for _, st := range kairos.States {
		c.States[st] = 0
	}
	h, err := s.handle(ctx, tenant, topic, false)
	if errors.Is(err, kairos.ErrNotFound) {
		return c, nil // the topic never had a job
	}
	if err != nil {
		return Counters{}, err
	}
	pipe := s.c.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, s.k.shards)
	for sh := range s.k.shards {
		cmds[sh] = pipe.HGetAll(ctx, s.k.counters(sh, h))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return Counters{}, fmt.Errorf("read counters of %s/%s: %w", tenant, topic, err)
	}
	for _, cmd := range cmds {
		for f, v := range cmd.Val() {
			n, _ := strconv.ParseInt(v, 10, 64)
			c.add(f, n)
		}
	}
	return c, nil
}

// Counts returns a topic's jobs by state (TopicCounters' States).
func (s *Store) Counts(ctx context.Context, tenant, topic string) (map[kairos.State]int64, error) {
	c, err := s.TopicCounters(ctx, tenant, topic)
	return c.States, err
}
