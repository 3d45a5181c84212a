package rdb

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

// LatenessBounds are the upper bounds, in milliseconds, of the lateness
// histogram kept per topic and minute; the last bucket is unbounded.
var LatenessBounds = []float64{0.5, 1, 1.5, 2, 3, 4, 5, 7.5, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300,
	500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 30000, 60000, math.Inf(1)}

// statsKey holds one topic's delivery figures for one minute.
func (k keys) stats(tenant, topic string, minute int64) string {
	return k.prefix + ":stats:{" + tenant + "/" + topic + "}:" + strconv.FormatInt(minute, 10)
}

// statsRetention is how long per-minute figures are kept.
const statsRetention = 2 * time.Hour

type topicID struct{ tenant, topic string }

type delta struct {
	delivered, failed, dead int64
	lateness                []int64
}

// Recorder aggregates delivery figures in memory and flushes them to Redis
// once a second, so recording costs no Redis command per job.
type Recorder struct {
	s       *Store
	mu      sync.Mutex
	pending map[topicID]*delta
}

// NewRecorder returns a Recorder writing to s; run it with Run.
func (s *Store) NewRecorder() *Recorder { return &Recorder{s: s, pending: map[topicID]*delta{}} }

// Observe records one finished attempt: its new state and, for a first
// attempt, how late it started.
func (r *Recorder) Observe(tenant, topic string, state kairos.State, attempt int, lateness time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := topicID{tenant, topic}
	d := r.pending[id]
	if d == nil {
		d = &delta{lateness: make([]int64, len(LatenessBounds))}
		r.pending[id] = d
	}
	switch state {
	case kairos.StateDelivered:
		d.delivered++
	case kairos.StateRetrying:
		d.failed++
	case kairos.StateDead:
		d.failed++
		d.dead++
	}
	if attempt == 1 {
		ms := float64(lateness) / float64(time.Millisecond)
		for i, b := range LatenessBounds {
			if ms <= b {
				d.lateness[i]++
				break
			}
		}
	}
}

// Run flushes every second until ctx ends, then once more.
func (r *Recorder) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			r.Flush(fctx)
			cancel()
			return
		case <-t.C:
			r.Flush(ctx)
		}
	}
}

// Flush writes the figures gathered since the last flush.
func (r *Recorder) Flush(ctx context.Context) error {
	r.mu.Lock()
	pending := r.pending
	r.pending = map[topicID]*delta{}
	r.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	minute := r.s.Now().Unix() / 60
	pipe := r.s.c.Pipeline()
	for id, d := range pending {
		key := r.s.k.stats(id.tenant, id.topic, minute)
		incr := func(f string, n int64) {
			if n != 0 {
				pipe.HIncrBy(ctx, key, f, n)
			}
		}
		incr("d", d.delivered)
		incr("f", d.failed)
		incr("x", d.dead)
		for i, n := range d.lateness {
			incr("l"+strconv.Itoa(i), n)
		}
		pipe.Expire(ctx, key, statsRetention)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("flush stats: %w", err)
	}
	return nil
}

// Recent are a topic's delivery figures over the last minutes.
type Recent struct {
	Minutes              int
	Delivered            int64
	Failed               int64 // failed attempts, dead ones included
	Dead                 int64
	Sampled              int64   // first attempts whose lateness was recorded
	P50, P90, P99, Worst float64 // lateness in ms: upper bounds of histogram buckets
}

// RecentStats sums a topic's figures over the last minutes (the current,
// partial minute included).
func (s *Store) RecentStats(ctx context.Context, tenant, topic string, minutes int) (Recent, error) {
	now := s.Now().Unix() / 60
	pipe := s.c.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, minutes)
	for i := range minutes {
		cmds[i] = pipe.HGetAll(ctx, s.k.stats(tenant, topic, now-int64(i)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return Recent{}, fmt.Errorf("read stats of %s/%s: %w", tenant, topic, err)
	}
	r := Recent{Minutes: minutes}
	hist := make([]int64, len(LatenessBounds))
	for _, c := range cmds {
		for f, v := range c.Val() {
			n, _ := strconv.ParseInt(v, 10, 64)
			switch {
			case f == "d":
				r.Delivered += n
			case f == "f":
				r.Failed += n
			case f == "x":
				r.Dead += n
			case len(f) > 1 && f[0] == 'l':
				if i, err := strconv.Atoi(f[1:]); err == nil && i < len(hist) {
					hist[i] += n
				}
			}
		}
	}
	for _, n := range hist {
		r.Sampled += n
	}
	r.P50, r.P90, r.P99, r.Worst = quantile(hist, r.Sampled, 0.5), quantile(hist, r.Sampled, 0.9), quantile(hist, r.Sampled, 0.99), quantile(hist, r.Sampled, 1)
	return r, nil
}

func quantile(hist []int64, total int64, q float64) float64 {
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for i, n := range hist {
		seen += n
		if seen >= rank {
			if math.IsInf(LatenessBounds[i], 1) {
				return LatenessBounds[i-1]
			}
			return LatenessBounds[i]
		}
	}
	return 0
}

// DueSoon counts pending jobs (scheduled, ready or retrying) due in each of
// n slots of width step from now, across every shard. It reads the wheel
// slots processed within that span and the records their entries name, so
// that stale entries (a job rescheduled, cancelled or finished since) are
// not counted: work in proportion to the jobs due in the span, for admins'
// figures only.
func (s *Store) DueSoon(ctx context.Context, n int, step time.Duration) ([]int64, error) {
	now := ms(s.Now())
	end := now + int64(n)*step.Milliseconds()
	pipe := s.c.Pipeline()
	slots := make([]*redis.StringSliceCmd, s.k.shards)
	for sh := range s.k.shards {
		slots[sh] = pipe.ZRangeByScore(ctx, s.k.due(sh), &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(end, 10)})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("due soon: %w", err)
	}
	type slot struct {
		shard int
		start int64
		cmd   *redis.StringSliceCmd
	}
	var read []slot
	pipe = s.c.Pipeline()
	for sh, c := range slots {
		for _, m := range c.Val() {
			if start, ok := slotStart(m); ok {
				read = append(read, slot{shard: sh, start: start, cmd: pipe.LRange(ctx, s.k.tag(sh)+"w:"+m, 0, -1)})
			}
		}
	}
	if len(read) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
			return nil, fmt.Errorf("due soon: %w", err)
		}
	}
	type entry struct {
		at  int64
		cmd *redis.StringCmd
	}
	var es []entry
	pipe = s.c.Pipeline()
	for _, sl := range read {
		for _, e := range sl.cmd.Val() {
			f, off, _ := strings.Cut(e, ",")
			d, _ := strconv.ParseInt(off, 36, 64)
			if at := sl.start + d; at >= now && at < end {
				es = append(es, entry{at: at, cmd: pipe.HGet(ctx, s.k.pool(sl.shard), f)})
			}
		}
	}
	out := make([]int64, n)
	if len(es) == 0 {
		return out, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return nil, fmt.Errorf("due soon: %w", err)
	}
	for _, e := range es {
		r, err := decodeRecord(e.cmd.Val())
		if err != nil || r.next != e.at {
			continue // stale
		}
		if st := stateOf(r.state); st == kairos.StateScheduled || st == kairos.StateReady || st == kairos.StateRetrying {
			out[(e.at-now)/step.Milliseconds()]++
		}
	}
	return out, nil
}

// slotStart returns when wheel slot m ("<level>:<number>") starts (ms).
func slotStart(m string) (int64, bool) {
	level, num, ok := strings.Cut(m, ":")
	l, err1 := strconv.Atoi(level)
	v, err2 := strconv.ParseInt(num, 36, 64)
	if !ok || err1 != nil || err2 != nil || l < 0 || l >= len(wheelWidths) {
		return 0, false
	}
	return v * wheelWidths[l], true
}

// BucketDepths returns the number of jobs stored in each shard's pool,
// whatever their state.
func (s *Store) BucketDepths(ctx context.Context) ([]int64, error) {
	out, err := s.ints(ctx, s.k.shards, func(pipe redis.Pipeliner, sh int) *redis.IntCmd {
		return pipe.HLen(ctx, s.k.pool(sh))
	})
	if err != nil {
		return nil, fmt.Errorf("bucket depths: %w", err)
	}
	return out, nil
}
