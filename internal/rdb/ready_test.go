package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testclock"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// claimOnly claims shard's due jobs onto their ready lists, popping none.
func claimOnly(t *testing.T, s *Store, shard int) Pass {
	t.Helper()
	p, err := s.Claim(context.Background(), shard, 100, 0, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// popAll pops what shard's ready list of topic orders holds, starting it.
func popAll(t *testing.T, s *Store, shard int) []kairos.Claimed {
	t.Helper()
	h, err := s.handle(context.Background(), "acme", "orders", false)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := s.Pop(context.Background(), []int{shard}, []string{h}, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cs, err = s.Start(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestClaimPushesOntoReadyLists: a claim leaves its jobs on their topic's
// ready list under a pop lease; the pop that takes them starts them (their
// lease then runs), and pops nothing more.
func TestClaimPushesOntoReadyLists(t *testing.T) {
	s, clk := newStore(t, Options{})
	j := enqueue(t, s, "a", clk.Now())
	sh := s.k.shardOf(j.JobKey)
	if p := claimOnly(t, s, sh); p.Claimed != 1 || p.Active != 1 || len(p.Handles) != 1 {
		t.Fatalf("claim: %+v, want one job pushed and active", p)
	}
	ctx := context.Background()
	if n := s.c.ZCard(ctx, s.k.popLeases(sh)).Val(); n != 1 {
		t.Fatalf("%d pop leases after the claim, want 1", n)
	}
	cs := popAll(t, s, sh)
	if len(cs) != 1 || cs[0].Job.ID != "a" || cs[0].Job.Attempts != 1 || !cs[0].Due.Equal(j.RunAt) {
		t.Fatalf("popped %+v", cs)
	}
	if lq, l := s.c.ZCard(ctx, s.k.popLeases(sh)).Val(), s.c.ZCard(ctx, s.k.leases(sh)).Val(); lq != 0 || l != 1 {
		t.Errorf("after the pop: %d pop leases and %d leases, want 0 and 1", lq, l)
	}
	if again := popAll(t, s, sh); len(again) != 0 {
		t.Errorf("popped %d more", len(again))
	}
}

// TestWaitingEntryKeepsItsPlace: a job whose entry still waits on its
// ready list when its pop lease lapses (no worker had room) stays there,
// once, in the same attempt.
func TestWaitingEntryKeepsItsPlace(t *testing.T) {
	s, clk := newStore(t, Options{})
	j := enqueue(t, s, "a", clk.Now())
	sh := s.k.shardOf(j.JobKey)
	claimOnly(t, s, sh)
	for range 3 {
		clk.Add(s.popLease() + time.Second)
		if p := claimOnly(t, s, sh); p.Claimed != 0 {
			t.Fatalf("the waiting job was pushed again: %+v", p)
		}
	}
	cs := popAll(t, s, sh)
	if len(cs) != 1 || cs[0].Job.Attempts != 1 {
		t.Fatalf("popped %+v, want the job once in attempt 1", cs)
	}
	if got := getJob(t, s, "a"); len(got.Log) != 0 {
		t.Errorf("attempt log %+v: waiting is no lost attempt", got.Log)
	}
}

// TestLostPopIsPushedAgain: a job whose entry was popped but never started
// (the pop's reply was lost) is pushed again when its pop lease lapses, in
// the same attempt, and only one of its two entries starts it.
func TestLostPopIsPushedAgain(t *testing.T) {
	s, clk := newStore(t, Options{})
	j := enqueue(t, s, "a", clk.Now())
	sh := s.k.shardOf(j.JobKey)
	claimOnly(t, s, sh)
	h, _ := s.handle(context.Background(), "acme", "orders", false)
	lost, err := s.c.LPop(context.Background(), s.k.readyList(sh, h)).Result() // the pop whose reply never came
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(s.popLease() + time.Second)
	if p := claimOnly(t, s, sh); p.Claimed != 1 {
		t.Fatalf("claim after the lapse: %+v, want the lost job pushed again", p)
	}
	cs := popAll(t, s, sh)
	if len(cs) != 1 || cs[0].Job.Attempts != 1 {
		t.Fatalf("popped %+v, want the job in attempt 1", cs)
	}
	// the lost entry, delivered late after all, starts nothing
	late, err := s.readyEntry(kairos.JobKey{Tenant: "acme", Topic: "orders"}, lost, time.Now(), &ticket{})
	if err != nil {
		t.Fatal(err)
	}
	if started, err := s.start(context.Background(), sh, h, []kairos.Claimed{late}); err != nil || len(started) != 0 {
		t.Errorf("the lost entry started %d jobs (%v), want none", len(started), err)
	}
}

// TestStartIsDoneOncePerToken: a start call repeated with its token (its
// reply was lost) answers as the first did.
func TestStartIsDoneOncePerToken(t *testing.T) {
	s, clk := newStore(t, Options{})
	j := enqueue(t, s, "a", clk.Now())
	sh := s.k.shardOf(j.JobKey)
	claimOnly(t, s, sh)
	h, _ := s.handle(context.Background(), "acme", "orders", false)
	e, err := s.c.RPop(context.Background(), s.k.readyList(sh, h)).Result()
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.readyEntry(kairos.JobKey{Tenant: "acme", Topic: "orders"}, e, time.Now(), &ticket{})
	if err != nil {
		t.Fatal(err)
	}
	argv := []any{startTokenTTL.Milliseconds(), field(h, "a") + "," + "1," + ticketOf(c).entryHead, field(h, "a"), ticketOf(c).lease}
	keys := []string{s.k.popLeases(sh), s.k.leases(sh), s.k.tag(sh) + "st:tok"}
	for i := range 2 {
		res, err := s.run(context.Background(), startScript, keys, argv...).Text()
		if err != nil || res != "1" {
			t.Fatalf("call %d: %q %v, want \"1\" both times", i+1, res, err)
		}
	}
}

// TestStartOutlastsAnOutage: a start call sent into an outage longer than
// startPatience is repeated, with its token, until Redis answers: its job,
// started as Redis came back, is returned to the worker to fire, not left
// started and unfired until its lease lapses.
func TestStartOutlastsAnOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("freezes redis-server for 11 s")
	}
	ctx := context.Background()
	srv := testredis.New(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: time.Second})
	t.Cleanup(func() { c.Close() })
	clk := testclock.New(time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC))
	s := New(c, Options{Prefix: "k", Now: clk.Now, Blocking: c})
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	j := enqueue(t, s, "a", clk.Now())
	sh := s.k.shardOf(j.JobKey)
	claimOnly(t, s, sh)
	h, err := s.handle(ctx, "acme", "orders", false)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := s.Pop(ctx, []int{sh}, []string{h}, 100, 0)
	if err != nil || len(cs) != 1 {
		t.Fatalf("popped %d, %v", len(cs), err)
	}
	if err := srv.Freeze(); err != nil {
		t.Fatal(err)
	}
	thawed := make(chan error, 1)
	go func() {
		time.Sleep(startPatience + time.Second) // the point: an outage past the start's patience
		thawed <- srv.Thaw()
	}()
	started, err := s.Start(ctx, cs)
	if err := <-thawed; err != nil {
		t.Fatal(err)
	}
	if err != nil || len(started) != 1 {
		t.Fatalf("start through an outage of %v: %d started, %v; want the job", startPatience+time.Second, len(started), err)
	}
}
