package rdb

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// batch creates ids in one call, due at runAt.
func batch(t *testing.T, s *Store, runAt time.Time, ids ...string) {
	t.Helper()
	jobs := make([]kairos.Job, len(ids))
	for i, id := range ids {
		jobs[i] = kairos.Job{JobKey: key(id), RunAt: runAt, Payload: []byte(`{"n":1}`)}
	}
	enqueueAll(t, s, jobs)
}

// listAll pages through the topic's listing, limit jobs a page.
func listAll(t *testing.T, s *Store, limit int) [][]string {
	t.Helper()
	var pages [][]string
	cur := ""
	for range 50 {
		p, err := s.ListJobs(context.Background(), ListQuery{Tenant: "acme", Topic: "orders", Cursor: cur, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, j := range p.Jobs {
			ids = append(ids, j.ID)
		}
		if len(ids) > 0 {
			pages = append(pages, ids)
		}
		if p.Next == "" {
			return pages
		}
		cur = p.Next
	}
	t.Fatal("listing never ended")
	return nil
}

// indexState is the shard-0 index's members and its groups' contents.
func indexState(t *testing.T, s *Store) (members []string, groups map[string]string) {
	t.Helper()
	ctx := context.Background()
	members = s.c.ZRange(ctx, s.k.index(0, "acme", "orders"), 0, -1).Val()
	groups = map[string]string{}
	for _, k := range s.c.Keys(ctx, s.k.groupPrefix(0, "acme", "orders")+"*").Val() {
		groups[strings.TrimPrefix(k, s.k.groupPrefix(0, "acme", "orders"))] = s.c.Get(ctx, k).Val()
	}
	return members, groups
}

func msOf(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// Jobs created together share one index member; they list, page and
// cancel exactly as jobs with members of their own.
func TestIndexGroupsListAndCancel(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	t0 := clk.Now()
	batch(t, s, t0.Add(time.Hour), "a", "b", "c", "d", "e", "f")
	clk.Add(time.Millisecond)
	enqueue(t, s, "s1", clk.Now().Add(time.Hour))
	clk.Add(time.Millisecond)
	enqueue(t, s, "s2", clk.Now().Add(time.Hour))
	batch(t, s, clk.Now().Add(time.Hour), "x", "y") // too few for a group

	members, groups := indexState(t, s)
	if d := cmp.Diff([]string{"#" + msOf(t0), "s1", "s2", "x", "y"}, members); d != "" {
		t.Errorf("index members (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{msOf(t0): " a b c d e f"}, groups); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
	want := [][]string{{"y", "x", "s2"}, {"s1", "f", "e"}, {"d", "c", "b"}, {"a"}}
	if d := cmp.Diff(want, listAll(t, s, 3)); d != "" {
		t.Errorf("pages (-want +got):\n%s", d)
	}

	for _, id := range []string{"c", "a", "f"} {
		if err := s.Cancel(ctx, key(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, groups = indexState(t, s); groups[msOf(t0)] != " b d e" {
		t.Errorf("group after cancelling c, a and f = %q, want %q", groups[msOf(t0)], " b d e")
	}
	want = [][]string{{"y", "x", "s2", "s1"}, {"e", "d", "b"}}
	if d := cmp.Diff(want, listAll(t, s, 4)); d != "" {
		t.Errorf("pages after cancels (-want +got):\n%s", d)
	}
	for _, id := range []string{"b", "d", "e"} {
		if err := s.Cancel(ctx, key(id)); err != nil {
			t.Fatal(err)
		}
	}
	members, groups = indexState(t, s)
	if d := cmp.Diff([]string{"s1", "s2", "x", "y"}, members); d != "" || len(groups) != 0 {
		t.Errorf("an emptied group stays: members (-want +got):\n%s groups %v", d, groups)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 4})
}

// deliverAll pops, starts and delivers n jobs.
func deliverAll(t *testing.T, s *Store, now time.Time, n int) {
	t.Helper()
	ctx := context.Background()
	for range n {
		j, ok, err := s.Start(ctx, pop(t, s), time.Second)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if _, err := s.Finish(ctx, j.JobKey, kairos.Attempt{N: j.Attempts, At: now, Status: 200}, true, false, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
}

// A grouped job delivered and created again is listed once, as the new
// job; once delivered records expire, the sweep empties their group, and
// an id created again after its record expired keeps its new entry.
func TestIndexGroupsDeliveredAndCreatedAgain(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1, Retention: time.Second})
	t0 := clk.Now()
	batch(t, s, t0, "g1", "g2", "g3", "g4", "g5")
	deliverAll(t, s, t0, 5)

	clk.Add(time.Millisecond)
	t1 := clk.Now()
	enqueue(t, s, "g5", t1.Add(time.Hour)) // its delivered record still exists
	if _, groups := indexState(t, s); groups[msOf(t0)] != " g1 g2 g3 g4" {
		t.Errorf("group after g5 was created again = %q", groups[msOf(t0)])
	}
	if d := cmp.Diff([][]string{{"g5", "g4", "g3", "g2", "g1"}}, listAll(t, s, 10)); d != "" {
		t.Errorf("listing (-want +got):\n%s", d)
	}

	// The records expire (Redis's own TTL, 1s); g1 is created anew after.
	deadline := time.Now().Add(10 * time.Second)
	for s.c.Exists(ctx, s.k.job(0, key("g1")), s.k.job(0, key("g2")), s.k.job(0, key("g3")), s.k.job(0, key("g4"))).Val() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the delivered records never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
	clk.Add(time.Millisecond)
	t2 := clk.Now()
	enqueue(t, s, "g1", t2.Add(time.Hour))
	claimAll(t, s, t2.Add(7*time.Second)) // past the expiry plus its 5s margin
	members, groups := indexState(t, s)
	if d := cmp.Diff([]string{"g5", "g1"}, members); d != "" || len(groups) != 0 {
		t.Errorf("after the sweep: members (-want +got):\n%s groups %v", d, groups)
	}
	if d := cmp.Diff([][]string{{"g1", "g5"}}, listAll(t, s, 10)); d != "" {
		t.Errorf("listing after the sweep (-want +got):\n%s", d)
	}
	if n := s.c.ZCard(ctx, s.k.expiring(0)).Val(); n != 0 {
		t.Errorf("expiring set still holds %d entries", n)
	}
}

// Deleting a topic removes the groups its delivered jobs are listed by.
func TestIndexGroupsGoWithTheirTopic(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	putTopic(t, s, "https://example.com/hook")
	batch(t, s, clk.Now(), "d1", "d2", "d3", "d4")
	deliverAll(t, s, clk.Now(), 4)
	if _, groups := indexState(t, s); len(groups) != 1 {
		t.Fatalf("groups before the delete: %v", groups)
	}
	if err := s.DeleteTopic(ctx, "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	if members, groups := indexState(t, s); len(members) != 0 || len(groups) != 0 {
		t.Errorf("after the delete: members %v, groups %v", members, groups)
	}
}

// Jobs created in the same ms (here each by a call of its own) are all
// listed: a page that ends among them is followed by the rest.
func TestListingPagesThroughTies(t *testing.T) {
	s, clk := newStore(t, Options{Shards: 2})
	var want []string
	for i := range 10 {
		id := "t" + strconv.Itoa(i)
		enqueue(t, s, id, clk.Now().Add(time.Hour))
		want = append([]string{id}, want...)
	}
	var got []string
	for _, p := range listAll(t, s, 3) {
		got = append(got, p...)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("listing (-want +got):\n%s", d)
	}
}
