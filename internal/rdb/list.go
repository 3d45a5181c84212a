package rdb

import (
	"context"
	"encoding/base64"
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
	l := listing{
		index:  func(sh int) string { return s.k.index(sh, q.Tenant, q.Topic) },
		groups: func(sh int) string { return s.k.groupPrefix(sh, q.Tenant, q.Topic) },
		load: func(ctx context.Context, es []entry) ([]*kairos.Job, error) {
			jobs, err := s.loadEntries(ctx, q, es)
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
		l.index = func(sh int) string { return s.k.dead(sh, q.Tenant, q.Topic) }
		l.groups = nil // the dead letters' set holds ids only
	}
	return s.page(ctx, l, q.Cursor, q.Limit)
}

// listing is what page reads: a per-shard index, and how to load the jobs
// of its entries.
type listing struct {
	index  func(shard int) string
	groups func(shard int) string // index groups' key prefix (see candidates); nil for none
	// load returns the jobs of entries, nil for one to pass over.
	load func(ctx context.Context, es []entry) ([]*kairos.Job, error)
	// filtered says load passes over entries of jobs that exist, so a page
	// short of its limit may still have a next one.
	filtered bool
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
			if groups != nil && strings.HasPrefix(e.id, "#") {
				grouped = append(grouped, e)
				continue
			}
			all = append(all, e)
		}
	}
	if len(grouped) > 0 {
		pipe := s.c.Pipeline()
		ids := make([]*redis.StringCmd, len(grouped))
		for i, g := range grouped {
			ids[i] = pipe.Get(ctx, groups(g.shard)+strconv.FormatInt(g.score, 10))
		}
		if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
			return nil, false, fmt.Errorf("list index groups: %w", err)
		}
		for i, g := range grouped {
			for id := range strings.FieldsSeq(ids[i].Val()) {
				all = append(all, entry{shard: g.shard, score: g.score, id: id})
			}
		}
	}
	all = slices.DeleteFunc(all, func(e entry) bool {
		return e.score == cur.score && e.id >= cur.id && cur.id != ""
	})
	sort.Slice(all, func(i, j int) bool { return all[i].before(all[j]) })
	more := len(all) > limit
	if more {
		all = all[:limit]
	}
	return all, more, nil
}

var listFields = append(append([]string{"st", "ra", "na", "a", "ca", "fa", "m", "to", "ma", "uid"}, urlPieces...), logPieces...)

// logPieces are the fields of a job's attempt log: as many as LOG_FIELDS
// in lua/log.lua, which writes them.
var logPieces = func() []string {
	const pieces = 16
	f := []string{"log"}
	for i := 1; i < pieces; i++ {
		f = append(f, "log"+strconv.Itoa(i))
	}
	return f
}()

// loadListed reads the jobs of listing entries es, keyOf naming each
// entry's job, without their payloads, in one round trip. It decodes the
// jobs that live says the entry still lists, and returns the indexes of
// the others (gone, or changed) for the caller to drop from its index.
func (s *Store) loadListed(ctx context.Context, es []entry, keyOf func(entry) kairos.JobKey,
	live func(e entry, fields map[string]string) bool) ([]*kairos.Job, []int, error) {
	pipe := s.c.Pipeline()
	cmds := make([]*redis.SliceCmd, len(es))
	for i, e := range es {
		cmds[i] = pipe.HMGet(ctx, s.k.job(e.shard, keyOf(e)), listFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, fmt.Errorf("list jobs: %w", err)
	}
	out := make([]*kairos.Job, len(es))
	var stale []int
	for i, c := range cmds {
		h := make(map[string]string, len(listFields))
		for k, v := range c.Val() {
			if str, ok := v.(string); ok {
				h[listFields[k]] = str
			}
		}
		if !live(es[i], h) {
			stale = append(stale, i)
			continue
		}
		j, err := s.decodeJob(keyOf(es[i]), h)
		if err != nil {
			return nil, nil, err
		}
		out[i] = &j
	}
	return out, stale, nil
}

// loadEntries reads the listed jobs without their payloads; entries whose
// job has expired are dropped from the index on the way, and an entry left
// by an earlier job of the same id is passed over.
func (s *Store) loadEntries(ctx context.Context, q ListQuery, es []entry) ([]*kairos.Job, error) {
	keyOf := func(e entry) kairos.JobKey { return kairos.JobKey{Tenant: q.Tenant, Topic: q.Topic, ID: e.id} }
	out, stale, err := s.loadListed(ctx, es, keyOf, func(e entry, h map[string]string) bool {
		return h["st"] != "" && (q.State == kairos.StateDead || h["ca"] == strconv.FormatInt(e.score, 10))
	})
	if err != nil {
		return nil, err
	}
	if len(stale) > 0 && q.State != kairos.StateDead {
		// one round trip for all of them; a failure leaves the entry for next time
		s.evalAll(ctx, unindexScript, len(stale), func(i int) ([]string, []any) {
			e := es[stale[i]]
			return []string{s.k.index(e.shard, q.Tenant, q.Topic), s.k.job(e.shard, keyOf(e))},
				[]any{e.id, e.score, s.k.groupPrefix(e.shard, q.Tenant, q.Topic)}
		})
	}
	return out, nil
}
