package rdb

import (
	"context"

	"github.com/kairos-sh/kairos"
)

// DeadQuery selects a page of dead jobs across topics, most recently dead
// first.
type DeadQuery struct {
	Tenant string      // "" for every tenant
	Cursor string      // from the previous page; "" for the first
	Limit  int         // page size, 1 to 500
	Kind   kairos.Kind // "" for every kind; else jobs or notifications only
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
	return s.page(ctx, listing{index: index, load: s.loadDead, filtered: true}.ofKind(q.Kind), q.Cursor, q.Limit)
}

// loadDead reads the jobs of dead letter entries (pool fields), without
// payloads.
func (s *Store) loadDead(ctx context.Context, es []entry) ([]*kairos.Job, error) {
	vs, err := s.loadRecords(ctx, es, func(e entry) string { return e.id })
	if err != nil {
		return nil, err
	}
	out := make([]*kairos.Job, len(es))
	type gone struct {
		e      entry
		tenant string
	}
	var stale []gone
	for i, v := range vs {
		key, _, err := s.jobKeyOf(ctx, es[i].id)
		if err != nil {
			continue // not an entry kairos wrote, or its topic unknown: left alone
		}
		r, err := decodeRecord(v)
		if err != nil || r.state != stateCodes[kairos.StateDead] {
			stale = append(stale, gone{es[i], key.Tenant})
			continue
		}
		j, err := r.job(key, s.webhookID)
		if err != nil {
			return nil, err
		}
		j.Payload = nil
		out[i] = &j
	}
	if len(stale) > 0 {
		// one round trip for all of them; a failure leaves the entry for next time
		s.evalAll(ctx, undeadScript, len(stale), func(n int) ([]string, []any) {
			g := stale[n]
			return []string{s.k.pool(g.e.shard)}, []any{s.k.tag(g.e.shard), g.tenant, g.e.id}
		})
	}
	return out, nil
}
