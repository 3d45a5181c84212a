package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Claimed is a due job handed out by ClaimDue.
type Claimed struct {
	Tenant, Topic, ID string
	Gen               int64
}

// Claim is the result of one ClaimDue call.
type Claim struct {
	Moved int       // jobs handed out
	Next  time.Time // when the shard's earliest remaining member is due; zero when empty
	Now   time.Time // the Redis time the claim was decided at
}

// maxClaim bounds a claim's batch: the script passes each batch to one
// ZADD, and Lua limits how many values one call can take.
const maxClaim = 2000

// ClaimDue moves up to limit due jobs of shard to a ready lease and pushes
// them onto their topics' ready lists. What is due is decided on Redis's
// own clock (TIME, inside the script), never on this machine's estimate of
// it, so a bad clock sync can delay a wake-up but never fire a job early.
// Two scanners claiming the same shard at once cannot hand a job out twice:
// the claim is one script and re-scores what it takes.
func (s *Store) ClaimDue(ctx context.Context, shard int, limit int) (Claim, error) {
	limit = min(limit, maxClaim)
	sweep := s.sweepLimit(shard)
	res, err := claimScript.Run(ctx, s.c, []string{s.k.bucket(shard), s.k.expiring(shard)},
		s.scriptNow(), limit, s.opts.ReadyLease.Milliseconds(), s.k.jobPrefix(shard), s.k.counterPrefix(shard), s.k.indexPrefix(shard),
		sweep, s.k.groupsPrefix(shard)).Slice()
	if err != nil {
		return Claim{}, fmt.Errorf("claim shard %d: %w", shard, err)
	}
	var c Claim
	if sc, ok := res[1].(string); ok {
		f, _ := strconv.ParseFloat(sc, 64)
		c.Next = fromMS(int64(f))
	}
	if sweep > 0 && len(res) > 3 && toInt(res[3]) == int64(sweep) {
		s.swept[shard].Store(0) // more have expired: the next claim sweeps again
	}
	if v, ok := res[2].(string); ok {
		f, _ := strconv.ParseFloat(v, 64)
		c.Now = time.UnixMicro(int64(f * 1000)).UTC()
	}
	flat, _ := res[0].([]any)
	if len(flat) == 0 {
		return c, nil
	}
	c.Moved = len(flat) / 2
	// One LPUSH per topic, in the order claimed (oldest due first out).
	type topicKey struct{ tenant, topic string }
	entries := map[topicKey][]any{}
	var order []topicKey
	for i := 0; i+1 < len(flat); i += 2 {
		member, _ := flat[i].(string)
		tenant, rest, _ := strings.Cut(member, "/")
		topic, id, _ := strings.Cut(rest, "/")
		k := topicKey{tenant, topic}
		if _, ok := entries[k]; !ok {
			order = append(order, k)
		}
		entries[k] = append(entries[k], readyEntry(id, toInt(flat[i+1])))
	}
	pipe := s.c.Pipeline()
	for _, k := range order {
		pipe.LPush(ctx, s.k.ready(k.tenant, k.topic), entries[k]...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		// The claimed jobs keep their lease in the bucket: they are handed
		// out again when it lapses, so nothing is lost.
		return c, fmt.Errorf("push claimed jobs of shard %d: %w", shard, err)
	}
	return c, nil
}

// sweepEvery is how often a shard's claim also drops the listing entries of
// expired delivered jobs; claims in between skip that look.
const sweepEvery = time.Second

// sweepLimit is how many expired listing entries a claim of shard drops:
// up to sweepBatch once per sweepEvery (by this process), else none; a
// sweep that found a full batch lets the next claim sweep again, so the
// sweep keeps up with any delivery rate.
func (s *Store) sweepLimit(shard int) int {
	now := time.Now().UnixNano()
	last := &s.swept[shard%len(s.swept)]
	prev := last.Load()
	if now-prev < int64(sweepEvery) || !last.CompareAndSwap(prev, now) {
		return 0
	}
	return sweepBatch
}

const sweepBatch = 1000

// scriptNow is the "now" argument of scripts that decide what is due: ""
// makes them read Redis's TIME; a pinned test clock is passed as is.
func (s *Store) scriptNow() any {
	if s.opts.Now != nil {
		return ms(s.opts.Now())
	}
	return ""
}

// Wake is a scanner wake-up: shard has a job due at At.
type Wake struct {
	Shard int
	At    time.Time
}

// SubscribeWake delivers wake-ups on the returned channel until ctx ends.
func (s *Store) SubscribeWake(ctx context.Context) <-chan Wake {
	out := make(chan Wake, 64)
	ps := s.c.Subscribe(ctx, s.k.wake())
	go func() {
		defer close(out)
		defer ps.Close()
		ch := ps.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				a, b, _ := strings.Cut(m.Payload, " ")
				shard, err1 := strconv.Atoi(a)
				at, err2 := strconv.ParseInt(b, 10, 64)
				if err1 != nil || err2 != nil {
					continue
				}
				select {
				case out <- Wake{Shard: shard, At: fromMS(at)}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// Heartbeat records that scanner instance id is alive and holds held
// shards. It returns how many shards each live instance (one that beat
// within ttl, itself included) said it holds.
func (s *Store) Heartbeat(ctx context.Context, id string, held int, ttl time.Duration) (map[string]int, error) {
	now := s.Now()
	pipe := s.c.TxPipeline()
	pipe.ZAdd(ctx, s.k.scanners(), redisZ(float64(ms(now)), id))
	pipe.ZRemRangeByScore(ctx, s.k.scanners(), "-inf", strconv.FormatInt(ms(now.Add(-ttl)), 10))
	pipe.HSet(ctx, s.k.scannersHeld(), id, held)
	live := pipe.ZRange(ctx, s.k.scanners(), 0, -1)
	counts := pipe.HGetAll(ctx, s.k.scannersHeld())
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("scanner heartbeat: %w", err)
	}
	out := make(map[string]int, len(live.Val()))
	for _, m := range live.Val() {
		n, _ := strconv.Atoi(counts.Val()[m])
		out[m] = n
	}
	if len(counts.Val()) > len(out) {
		var gone []string
		for m := range counts.Val() {
			if _, ok := out[m]; !ok {
				gone = append(gone, m)
			}
		}
		s.c.HDel(ctx, s.k.scannersHeld(), gone...)
	}
	return out, nil
}

// Leave removes scanner instance id from the live set.
func (s *Store) Leave(ctx context.Context, id string) error {
	pipe := s.c.TxPipeline()
	pipe.ZRem(ctx, s.k.scanners(), id)
	pipe.HDel(ctx, s.k.scannersHeld(), id)
	_, err := pipe.Exec(ctx)
	return err
}
