package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// kill creates job k due now and drives it through one failed last
// attempt at the store's clock, so that it dies.
func kill(t *testing.T, s *Store, k kairos.JobKey) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Enqueue(ctx, kairos.Job{JobKey: k, RunAt: s.Now(), Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	j := claimKey(t, s, k)
	st, err := s.Finish(ctx, k, kairos.Attempt{N: j.Attempts, At: s.Now(), Status: 500}, kairos.OutcomeDead, time.Time{})
	if err != nil || st != kairos.StateDead {
		t.Fatalf("finish %s: %q %v", k, st, err)
	}
}

// deadPages pages through ListDead, limit jobs a page, and returns the
// keys listed as "tenant/topic/id".
func deadPages(t *testing.T, s *Store, tenant string, limit int) []string {
	t.Helper()
	var out []string
	cur := ""
	for range 100 {
		p, err := s.ListDead(context.Background(), DeadQuery{Tenant: tenant, Cursor: cur, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Jobs) > limit {
			t.Fatalf("page of %d with limit %d", len(p.Jobs), limit)
		}
		for _, j := range p.Jobs {
			if j.State != kairos.StateDead || len(j.Payload) > 0 {
				t.Errorf("listed %s in state %s with payload %q", j.JobKey, j.State, j.Payload)
			}
			out = append(out, j.JobKey.String())
		}
		if p.Next == "" {
			return out
		}
		cur = p.Next
	}
	t.Fatal("listing never ended")
	return nil
}

// Dead jobs are listed across topics, per tenant or for every tenant, most
// recently dead first, and leave the listing when replayed, cancelled or
// created again.
func TestDeadAcrossTopics(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 4})
	order := []kairos.JobKey{ // in the order they die
		{Tenant: "acme", Topic: "orders", ID: "o1"}, {Tenant: "globex", Topic: "orders", ID: "o1"},
		{Tenant: "acme", Topic: "billing", ID: "b1"}, {Tenant: "acme", Topic: "orders", ID: "o2"},
		{Tenant: "acme", Topic: "mail", ID: "m1"}, {Tenant: "globex", Topic: "reports", ID: "r1"},
		{Tenant: "acme", Topic: "billing", ID: "b2"},
	}
	for _, k := range order {
		kill(t, s, k)
		clk.Add(time.Second)
	}
	kill(t, s, kairos.JobKey{Tenant: "acme", Topic: "mail", ID: "m2"}) // two die in the same ms
	kill(t, s, kairos.JobKey{Tenant: "acme", Topic: "mail", ID: "m3"})
	if _, err := s.Enqueue(ctx, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "orders", ID: "alive"}, RunAt: clk.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	newestFirst := func(tenant string) []string {
		out := []string{}
		if tenant == "" || tenant == "acme" {
			out = append(out, "acme/mail/m3", "acme/mail/m2")
		}
		for i := len(order) - 1; i >= 0; i-- {
			if tenant == "" || order[i].Tenant == tenant {
				out = append(out, order[i].String())
			}
		}
		return out
	}
	for _, tenant := range []string{"acme", "globex", ""} {
		for _, limit := range []int{1, 2, 3, 500} {
			if d := cmp.Diff(newestFirst(tenant), deadPages(t, s, tenant, limit)); d != "" {
				t.Errorf("tenant %q limit %d (-want +got):\n%s", tenant, limit, d)
			}
		}
	}
	if got := deadPages(t, s, "initech", 10); len(got) != 0 {
		t.Errorf("a tenant without dead jobs lists %v", got)
	}

	// replayed, cancelled, created again: no longer dead, no longer listed
	if _, err := s.Replay(ctx, order[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(ctx, order[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, kairos.Job{JobKey: order[3], RunAt: clk.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	want := []string{"acme/mail/m3", "acme/mail/m2", "acme/billing/b2", "acme/mail/m1"}
	if d := cmp.Diff(want, deadPages(t, s, "acme", 2)); d != "" {
		t.Errorf("after replay, cancel and re-create (-want +got):\n%s", d)
	}
	for sh := range s.Shards() {
		for _, k := range []string{s.k.deadTenant(sh, "acme"), s.k.deadAll(sh)} {
			for _, m := range s.c.ZRange(ctx, k, 0, -1).Val() {
				if jk, _, _ := s.jobKeyOf(ctx, m); jk == order[0] || jk == order[2] || jk == order[3] {
					t.Errorf("%s still holds %s", k, jk)
				}
			}
		}
	}
	// dying again moves a job to the top
	clk.Add(time.Second)
	j := claimKey(t, s, order[0])
	if _, err := s.Finish(ctx, j.JobKey, kairos.Attempt{N: j.Attempts, At: clk.Now(), Status: 500}, kairos.OutcomeDead, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := deadPages(t, s, "", 1); len(got) == 0 || got[0] != order[0].String() {
		t.Errorf("after dying again, listed %v; want %s first", got, order[0])
	}
}

// An entry whose job stopped being dead behind the scripts' back (a
// process of an earlier version replayed it) is passed over and dropped.
func TestDeadStaleEntryDropped(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	a, b := kairos.JobKey{Tenant: "acme", Topic: "orders", ID: "a"}, kairos.JobKey{Tenant: "acme", Topic: "orders", ID: "b"}
	kill(t, s, a)
	clk.Add(time.Second)
	kill(t, s, b)
	h, _ := s.handle(ctx, "acme", "orders", false)
	v := s.c.HGet(ctx, s.k.pool(0), field(h, "b")).Val()
	s.c.HSet(ctx, s.k.pool(0), field(h, "b"), "r"+v[1:])
	if d := cmp.Diff([]string{a.String()}, deadPages(t, s, "acme", 10)); d != "" {
		t.Errorf("listed (-want +got):\n%s", d)
	}
	for _, k := range []string{s.k.deadTenant(0, "acme"), s.k.deadAll(0)} {
		if d := cmp.Diff([]string{field(h, "a")}, s.c.ZRange(ctx, k, 0, -1).Val()); d != "" {
			t.Errorf("%s after the listing (-want +got):\n%s", k, d)
		}
	}
}

// claimKey claims every shard and returns job k's claim; the others it
// claimed on the way are given back.
func claimKey(t *testing.T, s *Store, k kairos.JobKey) kairos.Job {
	t.Helper()
	var found *kairos.Job
	var others []kairos.Claimed
	for _, c := range claimAll(t, s, 0) {
		if c.Job.JobKey == k {
			found = &c.Job
			continue
		}
		others = append(others, c)
	}
	if err := s.Release(context.Background(), others); err != nil {
		t.Fatal(err)
	}
	if found == nil {
		t.Fatalf("%s was not claimed", k)
	}
	return *found
}
