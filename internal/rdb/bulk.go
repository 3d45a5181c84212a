package rdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

// opCursor is where an operation's walk stands: the index it walks (Src:
// "l" the label K=V's, "d" the dead letters', "i" the topic's listing
// index), the shard, and the last index member done (its score and
// name); Started is false before the shard's first member.
type opCursor struct {
	Src     string `json:"s"`
	K       string `json:"k,omitempty"`
	V       string `json:"v,omitempty"`
	Shard   int    `json:"sh"`
	Score   int64  `json:"sc,omitempty"`
	Member  string `json:"m,omitempty"`
	Started bool   `json:"st,omitempty"`
}

func decodeOpCursor(s string) (opCursor, error) {
	var c opCursor
	if s == "" {
		return c, nil
	}
	if err := json.Unmarshal([]byte(s), &c); err != nil || c.Shard < 0 {
		return opCursor{}, errBadOpCursor
	}
	return c, nil
}

func (c opCursor) encode() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// opActionBatch is how many actions go in one pipeline: Redis runs a
// pipeline's scripts one after another, so a smaller one lets other
// clients' commands (claims of jobs due meanwhile) in between.
const opActionBatch = 100

// eligible reports whether the action of op applies to a job in state st
// that its filter's state allows: a cancel to every job neither delivered
// nor cancelled already, a replay to dead and expired jobs (as a single
// replay).
func (op Operation) eligible(st kairos.State) bool {
	if op.Filter.State != "" && st != op.Filter.State {
		return false
	}
	if op.Action == ActionReplay {
		return st == kairos.StateDead || st == kairos.StateExpired
	}
	return st != kairos.StateDelivered && st != kairos.StateCancelled
}

// estimate is how many jobs op may match, read from the indexes and
// counters it walks: no job is read.
func (s *Store) estimate(ctx context.Context, op Operation) (int64, error) {
	h, err := s.handle(ctx, op.Tenant, op.Topic, false)
	if errors.Is(err, kairos.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	switch src := s.opSource(op); src {
	case "l":
		_, n, err := s.smallestLabel(ctx, h, op.Filter.Labels)
		return n, err
	default:
		counts, err := s.Counts(ctx, op.Tenant, op.Topic)
		if err != nil {
			return 0, err
		}
		var n int64
		for st, c := range counts {
			if op.eligible(st) {
				n += c
			}
		}
		return n, nil
	}
}

// opSource is the index op walks: the rarest of its labels' when it has
// labels, the dead letters' for dead jobs (a replay of dead jobs alone
// reads nothing else), else the topic's listing (a replay of expired
// jobs: they are not dead letters).
func (s *Store) opSource(op Operation) string {
	switch {
	case len(op.Filter.Labels) > 0:
		return "l"
	case op.Filter.State == kairos.StateDead:
		return "d"
	}
	return "i"
}

// BulkBatch applies op's action to the next jobs of its walk from cursor
// (op.Cursor for the first batch: "" to start), about n of them in one
// shard, and says what it did and where the walk goes on. Each job is
// cancelled or replayed by the script a single cancel or replay runs, so
// a job that starts meanwhile is either delivered or cancelled.
func (s *Store) BulkBatch(ctx context.Context, op Operation, cursor string, n int) (Step, error) {
	cur, err := decodeOpCursor(cursor)
	if err != nil {
		return Step{}, err
	}
	h, err := s.handle(ctx, op.Tenant, op.Topic, false)
	if errors.Is(err, kairos.ErrNotFound) {
		return Step{Cursor: cursor, Finished: true}, nil
	}
	if err != nil {
		return Step{}, err
	}
	if cur.Src == "" {
		cur.Src = s.opSource(op)
		if cur.Src == "l" {
			p, _, err := s.smallestLabel(ctx, h, op.Filter.Labels)
			if err != nil {
				return Step{}, err
			}
			cur.K, cur.V = p.key, p.value
		}
	}
	for cur.Shard < s.k.shards {
		es, next, exhausted, err := s.opWalk(ctx, h, cur, n)
		if err != nil {
			return Step{}, err
		}
		if exhausted {
			next = opCursor{Src: cur.Src, K: cur.K, V: cur.V, Shard: cur.Shard + 1}
		}
		if len(es) == 0 {
			cur = next
			continue
		}
		step, err := s.opApply(ctx, op, h, cur, es)
		if err != nil {
			return Step{}, err
		}
		step.Cursor = next.encode()
		return step, nil
	}
	return Step{Cursor: cur.encode(), Finished: true}, nil
}

// opWalk reads the next entries of cur's index in its shard, oldest
// first, about n; exhausted says the shard has no more.
func (s *Store) opWalk(ctx context.Context, h string, cur opCursor, n int) ([]entry, opCursor, bool, error) {
	sh := cur.Shard
	switch cur.Src {
	case "l":
		return s.walkIndex(ctx, s.k.label(sh, h, cur.K, cur.V), cur, n)
	case "d":
		return s.walkIndex(ctx, s.k.dead(sh, h), cur, n)
	}
	// the listing index: a member "#<sec>" stands for a group of jobs
	// created in that second (lua/index.lua); members are taken whole
	members, next, exhausted, err := s.walkIndex(ctx, s.k.index(sh, h), cur, 64)
	if err != nil || len(members) == 0 {
		return nil, next, exhausted, err
	}
	pipe := s.c.Pipeline()
	groups := make([]*redis.StringSliceCmd, len(members))
	for i, m := range members {
		if strings.HasPrefix(m.id, "#") {
			groups[i] = pipe.LRange(ctx, s.k.groupPrefix(sh, h)+strings.TrimPrefix(m.id, "#"), 0, -1)
		}
	}
	if pipe.Len() > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
			return nil, cur, false, fmt.Errorf("operation walk: %w", err)
		}
	}
	var out []entry
	for i, m := range members {
		if groups[i] == nil {
			out = append(out, m)
		} else {
			for _, e := range groups[i].Val() {
				id, off, _ := strings.Cut(e, ",")
				d, _ := strconv.ParseInt(off, 36, 64)
				out = append(out, entry{shard: sh, score: m.score + d, id: id})
			}
		}
		next = opCursor{Src: cur.Src, Shard: sh, Score: m.score, Member: m.id, Started: true}
		if len(out) >= n && i < len(members)-1 {
			return out, next, false, nil
		}
	}
	return out, next, exhausted, nil
}

// walkIndex reads up to n members of a ZSET after cur's (score, member),
// by score then member, as Redis orders them; exhausted says none is left.
func (s *Store) walkIndex(ctx context.Context, key string, cur opCursor, n int) ([]entry, opCursor, bool, error) {
	min := "-inf"
	if cur.Started {
		min = strconv.FormatInt(cur.Score, 10)
	}
	for count := n; ; count *= 2 {
		zs, err := s.c.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: min, Max: "+inf", Count: int64(count)}).Result()
		if err != nil && !isNil(err) {
			return nil, cur, false, fmt.Errorf("operation walk: %w", err)
		}
		var out []entry
		for _, z := range zs {
			e := entry{shard: cur.Shard, score: int64(z.Score), id: z.Member.(string)}
			if cur.Started && e.score == cur.Score && e.id <= cur.Member {
				continue // done already: ties are ordered by member
			}
			out = append(out, e)
		}
		exhausted := len(zs) < count
		if len(out) > n {
			out, exhausted = out[:n], false
		}
		if len(out) > 0 || exhausted {
			next := cur
			if len(out) > 0 {
				last := out[len(out)-1]
				next.Score, next.Member, next.Started = last.score, last.id, true
			}
			return out, next, exhausted, nil
		}
	}
}

// opApply reads the jobs of entries es (one shard's), and applies op's
// action to those its filter selects.
func (s *Store) opApply(ctx context.Context, op Operation, h string, cur opCursor, es []entry) (Step, error) {
	var step Step
	vs, err := s.loadRecords(ctx, es, func(e entry) string { return field(h, e.id) })
	if err != nil {
		return Step{}, err
	}
	var ids []string
	deliveries := map[string]DeliveryMove{} // by id: how the action moves its subscription's counts
	from, to := ms(op.Filter.RunAtFrom), ms(op.Filter.RunAtTo)
	for i, v := range vs {
		r, err := decodeRecord(v)
		counted := cur.Src != "i" // the estimate counted every entry of a label or dead index
		if err != nil || (cur.Src != "d" && r.created != es[i].score) {
			step.Unmatch += b2n(counted)
			continue // gone, or an entry of an earlier job of the id
		}
		st := stateOf(r.state)
		if !counted {
			counted = op.eligible(st)
		}
		match := op.eligible(st) &&
			(op.Filter.RunAtFrom.IsZero() || r.runAt >= from) && (op.Filter.RunAtTo.IsZero() || r.runAt < to)
		if match && len(op.Filter.Labels) > 0 {
			var set settings
			match = len(r.settings) > 0 && json.Unmarshal(r.settings, &set) == nil &&
				hasLabels(kairos.Job{Labels: set.Labels}, op.Filter.Labels)
		}
		if !match {
			step.Unmatch += b2n(counted)
			continue
		}
		ids = append(ids, es[i].id)
		if m, ok := op.deliveryMove(es[i].id, st, r); ok {
			deliveries[es[i].id] = m
		}
	}
	if op.Action == ActionReplay && op.Limited && int64(len(ids)) > op.Room {
		step.Failed += int64(len(ids)) - op.Room // the tenant's max_pending refuses them
		ids = ids[:op.Room]
	}
	sh := cur.Shard
	var earliest time.Time
	var moves []DeliveryMove
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), opActionBatch)]
		ids = ids[len(chunk):]
		var cmds []*redis.Cmd
		if op.Action == ActionReplay {
			now := ms(s.Now())
			cmds = s.evalAll(ctx, replayScript, len(chunk), func(i int) ([]string, []any) {
				return []string{s.k.pool(sh), s.k.due(sh)}, []any{s.k.tag(sh), h, chunk[i], now, op.Tenant}
			})
		} else {
			cmds = s.evalAll(ctx, cancelScript, len(chunk), func(i int) ([]string, []any) {
				return s.jobKeys(sh), []any{s.k.tag(sh), h, chunk[i], op.Tenant, s.scriptNow(), WakeHorizon.Milliseconds(), s.opts.Retention.Milliseconds()}
			})
		}
		for i, c := range cmds {
			res, err := c.Slice()
			if err != nil {
				return Step{}, fmt.Errorf("operation %s %s: %w", op.ID, op.Action, err)
			}
			switch toInt(res[0]) {
			case replyOK:
				step.Done++
				if m, ok := deliveries[chunk[i]]; ok {
					if op.Action == ActionCancel {
						// the state it had, or none when it was cancelled already
						m.SubscriptionCounts = SubscriptionCounts{}
						if len(res) > 2 {
							was, _ := res[2].(string)
							m.SubscriptionCounts = CountsMove(kairos.State(was), kairos.StateCancelled)
						}
					}
					moves = append(moves, m)
				}
				if at, ok := redisTime(res[1]); ok && (earliest.IsZero() || at.Before(earliest)) {
					earliest = at
				}
			case replyNotFound:
				step.Unmatch++ // cancelled or gone meanwhile
			default:
				step.Failed++ // being delivered, delivered, or no longer dead
			}
		}
	}
	if !earliest.IsZero() {
		s.wake(ctx, s.c, sh, ms(earliest))
	}
	step.Uncounted = s.CountDeliveries(ctx, op.Tenant, op.Topic, moves)
	return step, nil
}

// deliveryMove says how op's action moves the counts of job id's
// subscription when the job (record r, of state st as read) is a delivery;
// a cancel's answer says again what it moved.
func (op Operation) deliveryMove(id string, st kairos.State, r record) (DeliveryMove, bool) {
	if !strings.Contains(id, kairos.DeliveryMark) || len(r.settings) == 0 {
		return DeliveryMove{}, false
	}
	var set settings
	if json.Unmarshal(r.settings, &set) != nil {
		return DeliveryMove{}, false
	}
	sub, ok := kairos.DeliveryOf(kairos.Job{JobKey: kairos.JobKey{ID: id}, Labels: set.Labels})
	if !ok {
		return DeliveryMove{}, false
	}
	to := kairos.StateCancelled
	if op.Action == ActionReplay {
		to = kairos.StateScheduled
	}
	return DeliveryMove{Subscription: sub, Born: fromMS(r.created), SubscriptionCounts: CountsMove(st, to)}, true
}

func b2n(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
