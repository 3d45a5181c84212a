package rdb

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testclock"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// batch creates ids in one call, due at runAt.
func batch(t *testing.T, s *Store, runAt time.Time, ids ...string) {
	t.Helper()
	jobs := make([]kairos.Job, len(ids))
	for i, id := range ids {
		jobs[i] = kairos.Job{JobKey: key(id), RunAt: runAt, Payload: []byte(`{"n":1}`)}
	}
	for i, r := range s.EnqueueBatch(context.Background(), jobs) {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
	}
}

// listAll pages through the topic's listing, limit jobs a page.
func listAll(t *testing.T, s *Store, state kairos.State, limit int) [][]string {
	t.Helper()
	var pages [][]string
	cur := ""
	for range 50 {
		p, err := s.ListJobs(context.Background(), ListQuery{Tenant: "acme", Topic: "orders", State: state, Cursor: cur, Limit: limit})
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

func flat(pages [][]string) []string {
	var out []string
	for _, p := range pages {
		out = append(out, p...)
	}
	return out
}

// TestListingNewestFirst: singles and batches, created over several
// seconds (each second is one listing group a shard), page newest first
// by creation ms, and a page may end inside a group.
func TestListingNewestFirst(t *testing.T) {
	s, clk := newStore(t, Options{Shards: 2})
	var want []string
	for i := range 12 {
		id := "s" + strconv.Itoa(10+i)
		if i%4 == 3 {
			ids := []string{id + "a", id + "b", id + "c"}
			batch(t, s, clk.Now().Add(time.Hour), ids...)
			want = append([]string{ids[2], ids[1], ids[0]}, want...) // same ms: by id, descending
		} else {
			enqueue(t, s, id, clk.Now().Add(time.Hour))
			want = append([]string{id}, want...)
		}
		clk.Add(300 * time.Millisecond)
	}
	for _, limit := range []int{1, 2, 5, 100} {
		if d := cmp.Diff(want, flat(listAll(t, s, "", limit))); d != "" {
			t.Errorf("limit %d (-want +got):\n%s", limit, d)
		}
	}
}

// TestListingPagesThroughTies: jobs created in the same ms (here each by a
// call of its own) are all listed: a page that ends among them is followed
// by the rest.
func TestListingPagesThroughTies(t *testing.T) {
	s, clk := newStore(t, Options{Shards: 2})
	var want []string
	for i := range 10 {
		id := "t" + strconv.Itoa(i)
		enqueue(t, s, id, clk.Now().Add(time.Hour))
		want = append([]string{id}, want...)
	}
	if d := cmp.Diff(want, flat(listAll(t, s, "", 3))); d != "" {
		t.Errorf("listing (-want +got):\n%s", d)
	}
}

// TestListingByStateAndCreatedAgain: a state filter lists only that state;
// an id created again after delivery is listed once, as its new job; a
// cancelled job is listed as cancelled.
func TestListingByStateAndCreatedAgain(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	batch(t, s, clk.Now(), "d1", "d2", "d3")
	for _, c := range claimAll(t, s, 0) {
		finishJob(t, s, c.Job, clk.Now(), 200, true, false, time.Time{})
	}
	clk.Add(time.Millisecond)
	enqueue(t, s, "d2", clk.Now().Add(time.Hour))
	enqueue(t, s, "x", clk.Now().Add(time.Hour))
	if err := s.Cancel(ctx, key("x")); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"x", "d2", "d3", "d1"}, flat(listAll(t, s, "", 10))); d != "" {
		t.Errorf("listing (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"x"}, flat(listAll(t, s, kairos.StateCancelled, 10))); d != "" {
		t.Errorf("cancelled (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"d3", "d1"}, flat(listAll(t, s, kairos.StateDelivered, 10))); d != "" {
		t.Errorf("delivered (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"d2"}, flat(listAll(t, s, kairos.StateScheduled, 10))); d != "" {
		t.Errorf("scheduled (-want +got):\n%s", d)
	}
}

// TestDeleteTopicTakesItsKeys: deleting a topic with only delivered jobs
// removes its listing, counters and dead letters.
func TestDeleteTopicTakesItsKeys(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	if _, _, err := s.PutTopic(ctx, kairos.Topic{Tenant: "acme", Name: "orders", CallbackURL: "https://example.com/hook"}); err != nil {
		t.Fatal(err)
	}
	batch(t, s, clk.Now(), "d1", "d2")
	enqueue(t, s, "p", clk.Now().Add(time.Hour))
	for _, c := range claimAll(t, s, 0) {
		finishJob(t, s, c.Job, clk.Now(), 200, true, false, time.Time{})
	}
	if err := s.DeleteTopic(ctx, "acme", "orders"); !errors.Is(err, kairos.ErrConflict) {
		t.Fatalf("delete with a pending job: %v", err)
	}
	if err := s.Cancel(ctx, key("p")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic(ctx, "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	h, _ := s.handle(ctx, "acme", "orders", false)
	for _, k := range []string{s.k.index(0, h), s.k.counters(0, h), s.k.dead(0, h)} {
		if s.c.Exists(ctx, k).Val() != 0 {
			t.Errorf("%s left after the delete", k)
		}
	}
	if n := len(s.c.Keys(ctx, s.k.groupPrefix(0, h)+"*").Val()); n != 0 {
		t.Errorf("%d listing groups left after the delete", n)
	}
}

// TestScriptCacheLost: every script still runs after Redis forgot them all
// (a restarted or promoted node): the EVALSHA cache and the function
// library alike.
func TestScriptCacheLost(t *testing.T) {
	ctx := context.Background()
	srv := testredis.New(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	clk := testclock.New(time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC))
	s := New(c, Options{Prefix: "k", Now: clk.Now, Blocking: c})
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if !s.functions.Load() {
		t.Fatal("the scripts do not run as functions on a redis-server 7")
	}
	if libs := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: library.name}).Val(); len(libs) != 1 || len(libs[0].Functions) != len(allScripts) {
		t.Fatalf("function library %s: %+v", library.name, libs)
	}
	flush := func() {
		t.Helper()
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.FunctionFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	batch(t, s, clk.Now(), "a", "b")
	flush()
	cs := claimAll(t, s, 0)
	if len(cs) != 2 {
		t.Fatalf("claimed %v after SCRIPT FLUSH", claimedIDs(cs))
	}
	flush()
	for _, cl := range cs {
		if st := finishJob(t, s, cl.Job, clk.Now(), 204, true, false, time.Time{}); st != kairos.StateDelivered {
			t.Fatalf("finish %s after SCRIPT FLUSH: %q", cl.Job.ID, st)
		}
	}
	flush()
	enqueue(t, s, "c", clk.Now().Add(time.Hour))
	flush()
	if _, err := s.Reschedule(ctx, key("c"), clk.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	flush()
	if err := s.Cancel(ctx, key("c")); err != nil {
		t.Fatal(err)
	}
}
