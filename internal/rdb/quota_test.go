package rdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// TestTenantPendingFollowsJobs: a tenant's pending jobs, summed from the
// per-shard counts the scripts keep, follow creates, replacements,
// cancels, deliveries, deaths and replays across its topics; another
// tenant's jobs are not counted.
func TestTenantPendingFollowsJobs(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, Options{})
	ctx := context.Background()
	want := func(tenant string, n int64) {
		t.Helper()
		got, err := s.TenantPending(ctx, tenant)
		if err != nil || got != n {
			t.Fatalf("%s pending %d (%v), want %d", tenant, got, err, n)
		}
	}
	want("acme", 0)
	for i := range 20 {
		topic := "orders"
		if i%2 == 1 {
			topic = "invoices"
		}
		if _, err := s.Enqueue(ctx, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: topic, ID: fmt.Sprint("j", i)}, RunAt: clk.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Enqueue(ctx, kairos.Job{JobKey: kairos.JobKey{Tenant: "globex", Topic: "orders", ID: "g"}, RunAt: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	want("acme", 20)
	want("globex", 1)
	enqueue(t, s, "j0", clk.Now()) // replaces a job that had not fired: still 20
	want("acme", 20)
	if err := s.Cancel(ctx, key("j2")); err != nil {
		t.Fatal(err)
	}
	want("acme", 19)
	var c kairos.Claimed
	for _, cl := range claimAll(t, s, 0) {
		if cl.Job.Tenant == "acme" {
			c = cl
		}
	}
	want("acme", 19) // active is pending
	finishJob(t, s, c.Job, clk.Now(), 500, false, true, time.Time{})
	want("acme", 18)
	if _, err := s.Replay(ctx, key("j0")); err != nil {
		t.Fatal(err)
	}
	want("acme", 19)
	c = claimOne(t, s, "j0")
	finishJob(t, s, c.Job, clk.Now(), 204, true, false, time.Time{})
	want("acme", 18)
	want("globex", 1)
}

// TestTakeRequestIsGCRA: a rate of 5 a second with a burst of 5 allows 5
// requests at once, refuses the 6th with the wait until the next, and
// allows one more once that wait has passed; a refusal writes nothing.
func TestTakeRequestIsGCRA(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, Options{})
	ctx := context.Background()
	q := kairos.Quota{Rate: 5}
	for i := range 5 {
		if wait, err := s.TakeRequest(ctx, "acme", q); err != nil || wait != 0 {
			t.Fatalf("request %d: wait %v, %v", i+1, wait, err)
		}
	}
	before, _ := s.c.Get(ctx, s.k.rate("acme")).Result()
	wait, err := s.TakeRequest(ctx, "acme", q)
	if err != nil || wait != 200*time.Millisecond {
		t.Fatalf("6th request: wait %v, %v; want 200ms", wait, err)
	}
	if after, _ := s.c.Get(ctx, s.k.rate("acme")).Result(); after != before {
		t.Errorf("a refused request changed the rate state: %s -> %s", before, after)
	}
	if wait, _ := s.TakeRequest(ctx, "globex", q); wait != 0 {
		t.Errorf("another tenant waits %v", wait)
	}
	clk.Add(200 * time.Millisecond)
	if wait, err := s.TakeRequest(ctx, "acme", q); err != nil || wait != 0 {
		t.Fatalf("after the wait: %v, %v", wait, err)
	}
}

// TestTenantPendingCountsOccurrences: a schedule's pending occurrence is
// one pending job of its tenant, through the chain of occurrences, and
// none once the schedule is deleted.
func TestTenantPendingCountsOccurrences(t *testing.T) {
	s, now, add := newScheduleStore(t)
	ctx := context.Background()
	if _, err := s.PutSchedule(ctx, everySecond("tick", now().Add(500*time.Millisecond), "")); err != nil {
		t.Fatal(err)
	}
	pending := func() int64 {
		t.Helper()
		n, err := s.TenantPending(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := pending(); n != 1 {
		t.Fatalf("pending %d with a schedule, want 1", n)
	}
	for range 5 {
		add(time.Second)
		fireDue(t, s)
		if n := pending(); n != 1 {
			t.Fatalf("pending %d as the schedule runs, want 1", n)
		}
	}
	if err := s.DeleteSchedule(ctx, "acme", "orders", "tick"); err != nil {
		t.Fatal(err)
	}
	if n := pending(); n != 0 {
		t.Fatalf("pending %d after the schedule was deleted, want 0", n)
	}
}

// TestRecountTenantPending: jobs stored before tenants' pending jobs were
// counted (no P:{s}:tp, no P:{s}:ht) are counted by the recount a new
// kairos runs at start, from the topics' counters.
func TestRecountTenantPending(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, Options{})
	ctx := context.Background()
	for _, topic := range []string{"orders", "invoices"} {
		if _, _, err := s.PutTopic(ctx, kairos.Topic{Tenant: "acme", Name: topic, CallbackURL: "https://x.example/"}); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if _, err := s.Enqueue(ctx, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: topic, ID: fmt.Sprint(i)}, RunAt: clk.Now().Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Cancel(ctx, kairos.JobKey{Tenant: "acme", Topic: "orders", ID: "0"}); err != nil {
		t.Fatal(err)
	}
	// as an older kairos left it
	for sh := range s.k.shards {
		s.c.Del(ctx, s.k.tenantPending(sh), s.k.topicTenants(sh))
	}
	s.c.HDel(ctx, s.k.meta(), "tenant_pending")
	if n, _ := s.TenantPending(ctx, "acme"); n != 0 {
		t.Fatalf("pending %d before the recount", n)
	}
	again := New(s.c, Options{Prefix: s.k.prefix, Now: clk.Now})
	if err := again.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := again.TenantPending(ctx, "acme"); err != nil || n != 9 {
		t.Fatalf("pending %d (%v) after the recount, want 9", n, err)
	}
	// and from then on the counts follow the jobs
	if err := again.Cancel(ctx, kairos.JobKey{Tenant: "acme", Topic: "invoices", ID: "1"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := again.TenantPending(ctx, "acme"); n != 8 {
		t.Fatalf("pending %d after a cancel, want 8", n)
	}
}
