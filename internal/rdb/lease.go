package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A scanner instance holds the shards it scans under one lease rather than
// a lock a shard: a lease is a field of the lease hash, "i:<instance>" ->
// when it expires (ms, Redis clock), and a shard held is "s:<shard>" ->
// the instance. Renewing the lease and reading everyone's (RenewLease) is
// two commands, whatever the shards held; that is most of what an idle
// process costs Redis. A shard whose holder's lease has expired is free:
// TakeShards gives it to the first instance that asks, in one script.
//
// An instance whose lease lapsed (it stalled, or lost Redis) may still be
// scanning for a moment after another took its shards; the claim script
// keeps that safe (two claims cannot hand a job out twice), the lease
// only saves work. RenewLease shows the instance that it lost them.

// LeaseView is the lease hash as RenewLease read it.
type LeaseView struct {
	Now    time.Time            // when it was read, on the Redis clock (this process's estimate)
	Alive  map[string]time.Time // instances whose lease has not expired, with its expiry
	Owners map[int]string       // shard -> the instance holding it, expired or not
}

// RenewLease extends instance id's lease to ttl from now and reads every
// instance's lease and shards: two commands, pipelined.
func (s *Store) RenewLease(ctx context.Context, id string, ttl time.Duration) (LeaseView, error) {
	now := s.Now()
	pipe := s.c.Pipeline()
	pipe.HSet(ctx, s.k.lease(), "i:"+id, ms(now.Add(ttl)))
	all := pipe.HGetAll(ctx, s.k.lease())
	if _, err := pipe.Exec(ctx); err != nil {
		return LeaseView{}, fmt.Errorf("renew scanner lease: %w", err)
	}
	v := LeaseView{Now: now, Alive: map[string]time.Time{}, Owners: map[int]string{}}
	for f, val := range all.Val() {
		switch {
		case strings.HasPrefix(f, "i:"):
			exp, err := strconv.ParseInt(val, 10, 64)
			if err == nil && exp > ms(now) {
				v.Alive[f[2:]] = fromMS(exp)
			}
		case strings.HasPrefix(f, "s:"):
			if n, err := strconv.Atoi(f[2:]); err == nil {
				v.Owners[n] = val
			}
		}
	}
	v.Alive[id] = now.Add(ttl)
	return v, nil
}

// TakeShards gives instance id up to want of shards that are free (held by
// no live instance, or by id already), renewing its lease to ttl from now
// on Redis's clock. It returns the shards taken.
func (s *Store) TakeShards(ctx context.Context, id string, ttl time.Duration, want int, shards []int) ([]int, error) {
	args := []any{s.scriptNow(), id, "take", ttl.Milliseconds(), want}
	for _, n := range shards {
		args = append(args, n)
	}
	res, err := s.run(ctx, leaseScript, []string{s.k.lease()}, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("take shards: %w", err)
	}
	return shardList(res), nil
}

// GiveShards gives back the shards instance id holds among shards; with
// end it also ends its lease (a stopping instance).
func (s *Store) GiveShards(ctx context.Context, id string, shards []int, end bool) error {
	e := "0"
	if end {
		e = "1"
	}
	args := []any{s.scriptNow(), id, "give", e, 0}
	for _, n := range shards {
		args = append(args, n)
	}
	if err := s.run(ctx, leaseScript, []string{s.k.lease()}, args...).Err(); err != nil {
		return fmt.Errorf("give back shards: %w", err)
	}
	return nil
}

func shardList(res []any) []int {
	if len(res) == 0 {
		return nil
	}
	list, _ := res[0].([]any)
	out := make([]int, 0, len(list))
	for _, v := range list {
		out = append(out, int(toInt(v)))
	}
	return out
}
