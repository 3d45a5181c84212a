package rdb

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// TestDropJobsKeepsTopics: DropJobs leaves no job, shard key or ready list
// of its prefix and keeps its topics; DropPrefix then leaves nothing. A
// prefix that a glob would confuse with the dropped one ("p[x]" matches
// "px") keeps every key.
func TestDropJobsKeepsTopics(t *testing.T) {
	ctx := context.Background()
	c := testredis.Client(t)
	base := testredis.Prefix(t)
	fill := func(prefix string) *Store {
		t.Helper()
		s := New(c, Options{Prefix: prefix, Shards: 4})
		if err := s.Init(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.PutTopic(ctx, kairos.Topic{Tenant: "acme", Name: "orders", CallbackURL: "https://example.com/hook"}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
			if _, err := s.Enqueue(ctx, kairos.Job{JobKey: key(id), RunAt: time.Now().Add(time.Hour), Payload: []byte(`1`)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.RPush(ctx, s.k.readyList(1, "x"), "x").Err(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s, other := fill(base+"[x]"), fill(base+"x")
	otherKeys := testredis.Keys(t, c, other.k.prefix)

	n, err := DropJobs(ctx, c, s.k.prefix)
	if err != nil {
		t.Fatal(err)
	}
	left := testredis.Keys(t, c, globEscape(s.k.prefix))
	for _, k := range left {
		if slices.ContainsFunc([]int{0, 1, 2, 3}, func(sh int) bool { return strings.HasPrefix(k, s.k.tag(sh)) }) {
			t.Errorf("DropJobs left %s", k)
		}
	}
	if n == 0 || len(left) == 0 {
		t.Fatalf("DropJobs deleted %d keys and left %v", n, left)
	}
	if _, err := s.GetJob(ctx, key("a")); err == nil {
		t.Error("a job is still there after DropJobs")
	}
	if ts, err := s.ListTopics(ctx, "acme"); err != nil || len(ts) != 1 {
		t.Errorf("topics after DropJobs: %v, %v; want the one topic kept", ts, err)
	}
	if in, err := PrefixInUse(ctx, c, s.k.prefix); err != nil || !in {
		t.Errorf("PrefixInUse after DropJobs = %v, %v; want true", in, err)
	}

	if _, err := DropPrefix(ctx, c, s.k.prefix); err != nil {
		t.Fatal(err)
	}
	if left := testredis.Keys(t, c, globEscape(s.k.prefix)); len(left) > 0 {
		t.Errorf("DropPrefix left %v", left)
	}
	if in, err := PrefixInUse(ctx, c, s.k.prefix); err != nil || in {
		t.Errorf("PrefixInUse after DropPrefix = %v, %v; want false", in, err)
	}
	if d := cmp.Diff(otherKeys, testredis.Keys(t, c, other.k.prefix)); d != "" {
		t.Errorf("keys of prefix %s (-before +after):\n%s", other.k.prefix, d)
	}
}
