package rdb

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

// ListQuery selects a page of a topic's jobs, newest first.
type ListQuery struct {
	Tenant, Topic string
	State         kairos.State // "" for every state
	Cursor        string       // from the previous page; "" for the first
	Limit         int          // page size, 1 to 500
	// Labels, when given, select the jobs that carry every one of them
	// (listLabelled); the page is then newest first by creation, dead
	// jobs too.
	Labels map[string]string
	Kind   kairos.Kind // "" for every kind; else jobs or notifications only
}

// ListPage is one page of jobs; Next is "" on the last page.
type ListPage struct {
	Jobs []kairos.Job
	Next string
}

// ErrBadCursor is returned for a cursor this store did not make.
var ErrBadCursor = fmt.Errorf("%w: cursor is not one this server returned", kairos.ErrInvalid)

type cursor struct {
	score int64
	id    string
}

func (c cursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.score, 10) + " " + c.id))
}

func decodeCursor(s string) (cursor, error) {
	if s == "" {
		return cursor{score: 1<<63 - 1}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, ErrBadCursor
	}
	a, id, ok := strings.Cut(string(b), " ")
	n, err := strconv.ParseInt(a, 10, 64)
	if !ok || err != nil {
		return cursor{}, ErrBadCursor
	}
	return cursor{score: n, id: id}, nil
}

type entry struct {
	shard int
	score int64
	id    string
}

// before orders entries newest first, ties by id descending.
func (e entry) before(o entry) bool {
	if e.score != o.score {
		return e.score > o.score
	}
	return e.id > o.id
}

// ListJobs returns a page of a topic's jobs, newest first (dead jobs by the
// time they died). It reads the per-shard indexes, never every job; a page
// filtered by state may hold fewer than Limit jobs and still have a Next.
func (s *Store) ListJobs(ctx context.Context, q ListQuery) (ListPage, error) {
	if _, err := decodeCursor(q.Cursor); err != nil {
		return ListPage{}, err
	}
	h, err := s.handle(ctx, q.Tenant, q.Topic, false)
	if errors.Is(err, kairos.ErrNotFound) {
		return ListPage{}, nil // the topic never had a job
	}
	if err != nil {
		return ListPage{}, err
	}
	if len(q.Labels) > 0 {
		return s.listLabelled(ctx, q, h)
	}
	l := listing{
		index:  func(sh int) string { return s.k.index(sh, h) },
		groups: func(sh int) string { return s.k.groupPrefix(sh, h) },
		load: func(ctx context.Context, es []entry) ([]*kairos.Job, error) {
			jobs, err := s.loadEntries(ctx, q, h, es)
			for i, j := range jobs {
				if j != nil && q.State != "" && j.State != q.State {
					jobs[i] = nil
				}
			}
			return jobs, err
		},
		filtered: q.State != "",
	}
	if q.State == kairos.StateDead {
		l.index = func(sh int) string { return s.k.dead(sh, h) }
		l.groups = nil // the dead letters' set holds ids only
	}
	return s.page(ctx, l.ofKind(q.Kind), q.Cursor, q.Limit)
}

// listing is what page reads: a per-shard index, and how to load the jobs
// of its entries.
type listing struct {
	index  func(shard int) string
	groups func(shard int) string // listing groups' key prefix (see candidates); nil for none
	// load returns the jobs of entries, nil for one to pass over.
	load func(ctx context.Context, es []entry) ([]*kairos.Job, error)
	// filtered says load passes over entries of jobs that exist, so a page
	// short of its limit may still have a next one.
	filtered bool
}

// ofKind returns l passing over the jobs of another kind than kind; ""
// keeps every kind.
func (l listing) ofKind(kind kairos.Kind) listing {
	if kind == "" {
		return l
	}
	load := l.load
	l.load = func(ctx context.Context, es []entry) ([]*kairos.Job, error) {
		jobs, err := load(ctx, es)
		for i, j := range jobs {
			if j != nil && kairos.KindOf(j.ID) != kind {
				jobs[i] = nil
			}
		}
		return jobs, err
	}
	l.filtered = true
	return l
}

// page returns the page of l after the cursor after, newest first, of at
// most limit jobs.
func (s *Store) page(ctx context.Context, l listing, after string, limit int) (ListPage, error) {
	cur, err := decodeCursor(after)
	if err != nil {
		return ListPage{}, err
	}
	var page ListPage
	for round := 0; round < 8 && len(page.Jobs) < limit; round++ {
		cands, more, err := s.candidates(ctx, l.index, l.groups, cur, limit)
		if err != nil {
			return ListPage{}, err
		}
		if len(cands) == 0 {
			return page, nil
		}
		jobs, err := l.load(ctx, cands)
		if err != nil {
			return ListPage{}, err
		}
		for i, j := range jobs {
			cur = cursor{score: cands[i].score, id: cands[i].id}
			if j == nil {
				continue
			}
			page.Jobs = append(page.Jobs, *j)
			if len(page.Jobs) == limit {
				if i < len(jobs)-1 || more {
					page.Next = cur.encode()
				}
				return page, nil
			}
		}
		if !more {
			return page, nil
		}
	}
	if len(page.Jobs) > 0 || l.filtered {
		page.Next = cur.encode()
	}
	return page, nil
}

// candidates merges the next limit index entries after cur across shards.
// A member "#<ms>" of a topic index stands for the group of ids created at
// that ms (groups gives a shard's group key prefix; see lua/index.lua).
func (s *Store) candidates(ctx context.Context, index, groups func(int) string, cur cursor, limit int) ([]entry, bool, error) {
	// Entries tied with the cursor's score are all read (there are few: the
	// jobs of one ms), the older ones limit+1 a shard: a LIMIT counted from
	// the cursor's score would spend itself on ties already listed.
	pipe := s.c.Pipeline()
	ties := make([]*redis.ZSliceCmd, s.k.shards)
	cmds := make([]*redis.ZSliceCmd, s.k.shards)
	for sh := range s.k.shards {
		upTo := strconv.FormatInt(cur.score, 10)
		if cur.id != "" {
			ties[sh] = pipe.ZRangeByScoreWithScores(ctx, index(sh), &redis.ZRangeBy{Min: upTo, Max: upTo})
			upTo = "(" + upTo
		}
		cmds[sh] = pipe.ZRevRangeByScoreWithScores(ctx, index(sh), &redis.ZRangeBy{
			Max: upTo, Min: "-inf", Count: int64(limit + 1)})
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return nil, false, fmt.Errorf("list index: %w", err)
	}
	var all, grouped []entry
	for sh, c := range cmds {
		zs := c.Val()
		if ties[sh] != nil {
			zs = append(zs, ties[sh].Val()...)
		}
		for _, z := range zs {
			e := entry{shard: sh, score: int64(z.Score), id: z.Member.(string)}
			if groups != nil && strings.HasPrefix(e.id, groupMark) {
				grouped = append(grouped, e)
				continue
			}
			all = append(all, e)
		}
	}
	if len(grouped) > 0 {
		pipe := s.c.Pipeline()
		ids := make([]*redis.StringSliceCmd, len(grouped))
		for i, g := range grouped {
			ids[i] = pipe.LRange(ctx, groups(g.shard)+strings.TrimPrefix(g.id, groupMark), 0, -1)
		}
		if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
			return nil, false, fmt.Errorf("list index groups: %w", err)
		}
		for i, g := range grouped {
			for _, e := range ids[i].Val() {
				id, off, _ := strings.Cut(e, ",")
				n, _ := strconv.ParseInt(off, 36, 64)
				all = append(all, entry{shard: g.shard, score: g.score + n, id: id})
			}
		}
	}
	all = slices.DeleteFunc(all, func(e entry) bool { // a group's entries can be later than the cursor
		return e.score > cur.score || (e.score == cur.score && e.id >= cur.id && cur.id != "")
	})
	sort.Slice(all, func(i, j int) bool { return all[i].before(all[j]) })
	more := len(all) > limit
	if more {
		all = all[:limit]
	}
	return all, more, nil
}

// loadRecords reads the pool records of entries in one round trip:
// fieldOf gives an entry's pool field. A missing record is "".
func (s *Store) loadRecords(ctx context.Context, es []entry, fieldOf func(entry) string) ([]string, error) {
	pipe := s.c.Pipeline()
	cmds := make([]*redis.StringCmd, len(es))
	for i, e := range es {
		cmds[i] = pipe.HGet(ctx, s.k.pool(e.shard), fieldOf(e))
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	out := make([]string, len(es))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// loadEntries reads the listed jobs of topic handle h, without their
// payloads; entries whose job is gone are dropped from the index on the
// way, and an entry left by an earlier job of the same id is passed over.
func (s *Store) loadEntries(ctx context.Context, q ListQuery, h string, es []entry) ([]*kairos.Job, error) {
	vs, err := s.loadRecords(ctx, es, func(e entry) string { return field(h, e.id) })
	if err != nil {
		return nil, err
	}
	out := make([]*kairos.Job, len(es))
	var stale []entry
	for i, v := range vs {
		r, err := decodeRecord(v)
		if err != nil || (q.State != kairos.StateDead && r.created != es[i].score) {
			stale = append(stale, es[i])
			continue
		}
		j, err := r.job(kairos.JobKey{Tenant: q.Tenant, Topic: q.Topic, ID: es[i].id}, s.webhookID)
		if err != nil {
			return nil, err
		}
		j.Payload = nil // listings leave payloads out
		out[i] = &j
	}
	if len(stale) > 0 && q.State != kairos.StateDead {
		// one round trip for all of them; a failure leaves the entry for next time
		s.evalAll(ctx, unindexScript, len(stale), func(i int) ([]string, []any) {
			e := stale[i]
			return []string{s.k.pool(e.shard)}, []any{s.k.tag(e.shard), h, e.id, e.score}
		})
	}
	return out, nil
}
