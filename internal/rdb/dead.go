package rdb

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kairos-sh/kairos"
)

// DeadQuery selects a page of dead jobs across topics, most recently dead
// first.
type DeadQuery struct {
	Tenant string // "" for every tenant
	Cursor string // from the previous page; "" for the first
	Limit  int    // page size, 1 to 500
}

// ListDead returns a page of the dead jobs of a tenant's topics (of every
// tenant's when q.Tenant is ""), most recently dead first. It merges the
// per-shard dead letters across topics (keys.deadTenant, keys.deadAll) that
// the scripts moving jobs into and out of the dead state keep; it scans
// nothing. An entry whose job is no longer dead is dropped on the way.
func (s *Store) ListDead(ctx context.Context, q DeadQuery) (ListPage, error) {
	index := s.k.deadAll
	if q.Tenant != "" {
		index = func(sh int) string { return s.k.deadTenant(sh, q.Tenant) }
	}
	return s.page(ctx, listing{index: index, load: s.loadDead, filtered: true}, q.Cursor, q.Limit)
}

// loadDead reads the jobs of dead letter entries (members
// "tenant/topic/id"), without payloads.
func (s *Store) loadDead(ctx context.Context, es []entry) ([]*kairos.Job, error) {
	keyOf := func(e entry) kairos.JobKey { return memberKey(e.id) }
	out, stale, err := s.loadListed(ctx, es, keyOf, func(e entry, h map[string]string) bool {
		return kairos.State(h["st"]) == kairos.StateDead
	})
	if err != nil {
		return nil, err
	}
	stale = slices.DeleteFunc(stale, func(i int) bool { return keyOf(es[i]).ID == "" }) // malformed: left alone
	if len(stale) > 0 {
		// one round trip for all of them; a failure leaves the entry for next time
		s.evalAll(ctx, undeadScript, len(stale), func(n int) ([]string, []any) {
			e := es[stale[n]]
			k := keyOf(e)
			return []string{s.k.job(e.shard, k), s.k.deadTenant(e.shard, k.Tenant), s.k.deadAll(e.shard)}, []any{e.id}
		})
	}
	return out, nil
}

// memberKey reads a bucket member, "tenant/topic/id" (no part holds a
// '/'); a malformed one gives the zero key.
func memberKey(m string) kairos.JobKey {
	parts := strings.SplitN(m, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return kairos.JobKey{}
	}
	return kairos.JobKey{Tenant: parts[0], Topic: parts[1], ID: parts[2]}
}

// deadCopyChunk is how many entries one deadcopy script call copies.
const deadCopyChunk = 500

// indexDead fills the dead letters across topics from each topic's own
// dead letters, once per deployment (meta field dead_index): jobs that
// died under a version that kept only the latter. It walks each set from
// its highest rank down, a chunk a script call: a job that dies meanwhile
// enters at the top (and is indexed by its finish script), and one that
// leaves shifts down only entries already copied, so none is missed. A
// job dying meanwhile in a process of the earlier version is not indexed
// across topics; it stays listed in its topic.
func (s *Store) indexDead(ctx context.Context) error {
	done, err := s.c.HGet(ctx, s.k.meta(), "dead_index").Result()
	if err != nil && !isNil(err) {
		return fmt.Errorf("read dead letter layout: %w", err)
	}
	if done == "1" {
		return nil
	}
	topics, err := s.ListTopics(ctx, "")
	if err != nil {
		return err
	}
	for _, t := range topics {
		for sh := range s.k.shards {
			src := s.k.dead(sh, t.Tenant, t.Name)
			n, err := s.c.ZCard(ctx, src).Result()
			if err != nil {
				return fmt.Errorf("index dead letters of %s/%s: %w", t.Tenant, t.Name, err)
			}
			for hi := n - 1; hi >= 0; hi -= deadCopyChunk {
				lo := max(0, hi-deadCopyChunk+1)
				err := deadCopyScript.Run(ctx, s.c, []string{src, s.k.deadTenant(sh, t.Tenant), s.k.deadAll(sh)},
					lo, hi, t.Tenant+"/"+t.Name+"/").Err()
				if err != nil {
					return fmt.Errorf("index dead letters of %s/%s: %w", t.Tenant, t.Name, err)
				}
			}
		}
	}
	if err := s.c.HSet(ctx, s.k.meta(), "dead_index", "1").Err(); err != nil {
		return fmt.Errorf("record dead letter layout: %w", err)
	}
	return nil
}
