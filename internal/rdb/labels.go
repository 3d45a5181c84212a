package rdb

import (
	"context"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

// label is the index of a topic's jobs in one shard that carry the label
// key=value: id -> created at (ms). The scripts that create, replace,
// cancel and expire jobs keep it (lua/index.lua, labelAdd and labelRem);
// a job without labels has no entry in any.
func (k keys) label(shard int, h, key, value string) string {
	return k.tag(shard) + keyLabel + h + ":" + key + "=" + value
}

// labelPair is one label of a filter.
type labelPair struct{ key, value string }

// sortedLabels returns labels as pairs in key order.
func sortedLabels(labels map[string]string) []labelPair {
	out := make([]labelPair, 0, len(labels))
	for k, v := range labels {
		out = append(out, labelPair{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// smallestLabel returns the label of labels whose index holds the fewest
// jobs of topic handle h across the shards, and that count: a listing or
// a bulk operation walks it and checks the other labels on each record,
// so it reads about as many entries as the rarest label has jobs.
func (s *Store) smallestLabel(ctx context.Context, h string, labels map[string]string) (labelPair, int64, error) {
	pairs := sortedLabels(labels)
	pipe := s.c.Pipeline()
	cards := make([][]*redis.IntCmd, len(pairs))
	for i, p := range pairs {
		cards[i] = make([]*redis.IntCmd, s.k.shards)
		for sh := range s.k.shards {
			cards[i][sh] = pipe.ZCard(ctx, s.k.label(sh, h, p.key, p.value))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return labelPair{}, 0, fmt.Errorf("label index sizes: %w", err)
	}
	best, bestN := 0, int64(-1)
	for i := range pairs {
		var n int64
		for _, c := range cards[i] {
			n += c.Val()
		}
		if bestN < 0 || n < bestN {
			best, bestN = i, n
		}
	}
	return pairs[best], bestN, nil
}

// hasLabels reports whether j carries every label of want.
func hasLabels(j kairos.Job, want map[string]string) bool {
	for k, v := range want {
		if got, ok := j.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// listLabelled is ListJobs for a query with labels: it walks the index of
// the rarest of them, newest first, and keeps the jobs whose records
// match the state and every label.
func (s *Store) listLabelled(ctx context.Context, q ListQuery, h string) (ListPage, error) {
	p, n, err := s.smallestLabel(ctx, h, q.Labels)
	if err != nil {
		return ListPage{}, err
	}
	if n == 0 {
		return ListPage{}, nil
	}
	l := listing{
		index: func(sh int) string { return s.k.label(sh, h, p.key, p.value) },
		load: func(ctx context.Context, es []entry) ([]*kairos.Job, error) {
			return s.loadLabelled(ctx, q, h, es)
		},
		filtered: true,
	}
	return s.page(ctx, l.ofKind(q.Kind), q.Cursor, q.Limit)
}

// loadLabelled reads the jobs of label index entries es of topic handle
// h, without their payloads; nil for one that does not match q. An entry
// whose job is gone is dropped from q's label indexes on the way.
func (s *Store) loadLabelled(ctx context.Context, q ListQuery, h string, es []entry) ([]*kairos.Job, error) {
	vs, err := s.loadRecords(ctx, es, func(e entry) string { return field(h, e.id) })
	if err != nil {
		return nil, err
	}
	out := make([]*kairos.Job, len(es))
	var stale []entry
	for i, v := range vs {
		r, err := decodeRecord(v)
		if err != nil || r.created != es[i].score {
			stale = append(stale, es[i])
			continue
		}
		j, err := r.job(kairos.JobKey{Tenant: q.Tenant, Topic: q.Topic, ID: es[i].id}, s.webhookID)
		if err != nil {
			return nil, err
		}
		if (q.State != "" && j.State != q.State) || !hasLabels(j, q.Labels) {
			continue
		}
		j.Payload = nil // listings leave payloads out
		out[i] = &j
	}
	if len(stale) > 0 {
		pairs := sortedLabels(q.Labels)
		s.evalAll(ctx, labelunindexScript, len(stale), func(i int) ([]string, []any) {
			e := stale[i]
			keys := []string{s.k.pool(e.shard)}
			for _, p := range pairs {
				keys = append(keys, s.k.label(e.shard, h, p.key, p.value))
			}
			return keys, []any{h, e.id, e.score}
		})
	}
	return out, nil
}
