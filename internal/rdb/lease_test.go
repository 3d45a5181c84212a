package rdb

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Shards held under a live lease are not anyone else's; once the lease
// expires they are free to the first instance that asks, and the expired
// lease is swept away.
func TestLeaseTakeOverAfterExpiry(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, Options{Shards: 4})
	ctx := context.Background()
	const ttl = 10 * time.Second
	got, err := s.TakeShards(ctx, "a", ttl, 3, []int{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 1, 2}, got); diff != "" {
		t.Fatalf("a took (-want +got):\n%s", diff)
	}
	if got, _ = s.TakeShards(ctx, "b", ttl, 4, []int{0, 1, 2, 3}); !slices.Equal(got, []int{3}) {
		t.Fatalf("b took %v while a's lease is live, want only the free shard 3", got)
	}
	clk.Add(ttl - time.Second)
	v, err := s.RenewLease(ctx, "a", ttl) // a renews: still its shards
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[int]string{0: "a", 1: "a", 2: "a", 3: "b"}, v.Owners); diff != "" {
		t.Fatalf("owners (-want +got):\n%s", diff)
	}
	if _, ok := v.Alive["b"]; !ok {
		t.Fatalf("b's lease not alive in %v", v.Alive)
	}
	clk.Add(2 * time.Second) // b's lease has expired, a's has not
	if got, _ = s.TakeShards(ctx, "a", ttl, 4, []int{3}); !slices.Equal(got, []int{3}) {
		t.Fatalf("a took %v of b's expired shards, want [3]", got)
	}
	if v, _ = s.RenewLease(ctx, "a", ttl); len(v.Alive) != 1 {
		t.Fatalf("alive %v: b's expired lease was not swept", v.Alive)
	}
	if err := s.GiveShards(ctx, "b", []int{0, 3}, true); err != nil {
		t.Fatal(err)
	}
	if v, _ = s.RenewLease(ctx, "a", ttl); len(v.Owners) != 4 {
		t.Fatalf("b gave back shards it no longer held: %v", v.Owners)
	}
	if err := s.GiveShards(ctx, "a", []int{0, 1, 2, 3}, true); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.c.Exists(ctx, s.k.lease()).Result(); n != 0 {
		all, _ := s.c.HGetAll(ctx, s.k.lease()).Result()
		t.Fatalf("lease hash left after the last instance gave everything back: %v", all)
	}
}
