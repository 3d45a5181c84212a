package rdb

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

// topicRecord is a topic as stored in the topics hash.
type topicRecord struct {
	URL           string            `json:"url,omitempty"`
	Method        string            `json:"method,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	TimeoutMS     int64             `json:"timeout_ms,omitempty"`
	MaxAttempts   int               `json:"max_attempts,omitempty"`
	BackoffInitMS int64             `json:"backoff_initial_ms,omitempty"`
	BackoffMaxMS  int64             `json:"backoff_max_ms,omitempty"`
	Concurrency   int               `json:"concurrency,omitempty"`
	RateLimit     int               `json:"rate_limit,omitempty"`
	RatePeriodMS  int64             `json:"rate_period_ms,omitempty"`
	Parallelism   int               `json:"parallelism,omitempty"`
	FlowKey       string            `json:"flow_key,omitempty"`
	BreakerFails  int               `json:"breaker_failures,omitempty"`
	BreakerCoolMS int64             `json:"breaker_cooldown_ms,omitempty"`
	FailureURL    string            `json:"failure_url,omitempty"`
	Signing       string            `json:"signing,omitempty"` // "" is kairos.SigningTenant
	SuccessURL    string            `json:"success_url,omitempty"`
	ResponseBytes int               `json:"response_bytes,omitempty"` // as kairos.Topic's: 0 the default, -1 none
	CreatedMS     int64             `json:"created_ms"`
	UpdatedMS     int64             `json:"updated_ms"`
}

// recordSigning is t.Signing as the record keeps it: "" for the tenant's
// secret, the default.
func recordSigning(t kairos.Topic) string {
	if t.Signing == kairos.SigningTopic {
		return kairos.SigningTopic
	}
	return ""
}

func topicField(tenant, name string) string { return tenant + "/" + name }

func encodeTopic(t kairos.Topic) ([]byte, error) {
	return json.Marshal(topicRecord{
		URL: t.CallbackURL, Method: t.Method, Headers: t.Headers,
		TimeoutMS: t.Timeout.Milliseconds(), MaxAttempts: t.MaxAttempts,
		BackoffInitMS: t.BackoffInitial.Milliseconds(), BackoffMaxMS: t.BackoffMax.Milliseconds(),
		Concurrency: t.Concurrency, RateLimit: t.RateLimit, RatePeriodMS: t.RatePeriod.Milliseconds(),
		Parallelism: t.Parallelism, FlowKey: t.FlowKey, BreakerFails: t.BreakerFailures, BreakerCoolMS: t.BreakerCooldown.Milliseconds(),
		FailureURL: t.FailureURL, Signing: recordSigning(t), SuccessURL: t.SuccessURL, ResponseBytes: t.ResponseBytes,
		CreatedMS: ms(t.CreatedAt), UpdatedMS: ms(t.UpdatedAt),
	})
}

func decodeTopic(field, raw string) (kairos.Topic, error) {
	var r topicRecord
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return kairos.Topic{}, fmt.Errorf("decode topic %s: %w", field, err)
	}
	tenant, name, _ := strings.Cut(field, "/")
	return kairos.Topic{
		Tenant: tenant, Name: name, CallbackURL: r.URL, Method: r.Method, Headers: r.Headers,
		Timeout: time.Duration(r.TimeoutMS) * time.Millisecond, MaxAttempts: r.MaxAttempts,
		BackoffInitial: time.Duration(r.BackoffInitMS) * time.Millisecond,
		BackoffMax:     time.Duration(r.BackoffMaxMS) * time.Millisecond,
		Concurrency:    r.Concurrency, RateLimit: r.RateLimit, RatePeriod: time.Duration(r.RatePeriodMS) * time.Millisecond,
		Parallelism: r.Parallelism, FlowKey: r.FlowKey, BreakerFailures: r.BreakerFails,
		BreakerCooldown: time.Duration(r.BreakerCoolMS) * time.Millisecond, FailureURL: r.FailureURL, Signing: r.Signing, CreatedAt: fromMS(r.CreatedMS), UpdatedAt: fromMS(r.UpdatedMS),
		SuccessURL: r.SuccessURL, ResponseBytes: r.ResponseBytes,
	}, nil
}

// PutTopic registers or replaces a topic. It reports whether the topic is new.
func (s *Store) PutTopic(ctx context.Context, t kairos.Topic) (kairos.Topic, bool, error) {
	field := topicField(t.Tenant, t.Name)
	now := s.Now()
	old, err := s.loadTopic(ctx, t.Tenant, t.Name)
	created := errors.Is(err, kairos.ErrNotFound)
	if err != nil && !created {
		return kairos.Topic{}, false, err
	}
	t.CreatedAt, t.UpdatedAt, t.Paused = now, now, false
	if !created {
		t.CreatedAt, t.Paused = old.CreatedAt, old.Paused // pause and resume have their own calls (P:paused)
	}
	raw, err := encodeTopic(t)
	if err != nil {
		return kairos.Topic{}, false, err
	}
	if created && s.opts.NewSecret != nil {
		// The tenant's signing keys are made with its first topic, not at
		// its first delivery: a delivery then needs no new key, and goes
		// on while Redis is out of memory.
		if _, err := s.GetSigningKeys(ctx, t.Tenant); err != nil {
			return kairos.Topic{}, false, err
		}
	}
	if own := t.OwnSecret(); own != "" && s.opts.NewSecret != nil {
		// a topic's own keys likewise, when it is given them
		if _, err := s.GetTopicSigningKeys(ctx, t.Tenant, own); err != nil {
			return kairos.Topic{}, false, err
		}
	}
	added, err := s.c.HSet(ctx, s.k.topics(), field, raw).Result()
	s.topics.forget(field)
	if err == nil && added > 0 {
		err = s.restoreTopic(ctx, t.Tenant, t.Name)
	}
	if err != nil {
		return kairos.Topic{}, false, fmt.Errorf("put topic %s: %w", field, err)
	}
	s.topicChanged(ctx)
	t.CreatedAt, t.UpdatedAt = fromMS(ms(t.CreatedAt)), fromMS(ms(t.UpdatedAt))
	return t, created, nil
}

// EnsureTopic registers a topic with no defaults unless it exists, so that
// jobs that carry their own callback URL still get consumers.
func (s *Store) EnsureTopic(ctx context.Context, tenant, name string) error {
	now := s.Now()
	raw, err := encodeTopic(kairos.Topic{CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return err
	}
	added, err := s.c.HSetNX(ctx, s.k.topics(), topicField(tenant, name), raw).Result()
	s.topics.forget(topicField(tenant, name))
	if err == nil && added {
		err = s.restoreTopic(ctx, tenant, name)
	}
	if err != nil {
		return fmt.Errorf("ensure topic %s/%s: %w", tenant, name, err)
	}
	if added {
		s.topicChanged(ctx)
	}
	return nil
}

// GetTopic returns a topic or kairos.ErrNotFound. A topic found is kept in
// memory for topicTTL, so that creating jobs costs no Redis call for it:
// this Store's PutTopic, EnsureTopic and DeleteTopic show at once, another
// process's (or another Store's) up to topicTTL late. A missing topic is not
// kept, so a topic registered anywhere is seen at once.
func (s *Store) GetTopic(ctx context.Context, tenant, name string) (kairos.Topic, error) {
	field := topicField(tenant, name)
	c := &s.topics
	if t, ok := c.get(field); ok {
		return t, nil
	}
	gen := c.generation()
	t, err := s.loadTopic(ctx, tenant, name)
	if err == nil {
		c.put(field, t, gen)
		t.Headers = maps.Clone(t.Headers)
	}
	return t, err
}

// loadTopic reads a topic from Redis, past the cache.
func (s *Store) loadTopic(ctx context.Context, tenant, name string) (kairos.Topic, error) {
	field := topicField(tenant, name)
	pipe := s.c.Pipeline()
	get := pipe.HGet(ctx, s.k.topics(), field)
	paused := pipe.SIsMember(ctx, s.k.paused(), field)
	_, _ = pipe.Exec(ctx) // each command's error is read below
	raw, err := get.Result()
	if errors.Is(err, redis.Nil) {
		return kairos.Topic{}, fmt.Errorf("topic %q: %w", name, kairos.ErrNotFound)
	}
	if err == nil {
		err = paused.Err()
	}
	if err != nil {
		return kairos.Topic{}, fmt.Errorf("get topic %s: %w", field, err)
	}
	t, err := decodeTopic(field, raw)
	t.Paused = paused.Val()
	return t, err
}

// ListTopics returns a tenant's topics by name, or every tenant's when tenant is "".
func (s *Store) ListTopics(ctx context.Context, tenant string) ([]kairos.Topic, error) {
	pipe := s.c.Pipeline()
	getAll := pipe.HGetAll(ctx, s.k.topics())
	getPaused := pipe.SMembers(ctx, s.k.paused())
	_, _ = pipe.Exec(ctx) // each command's error is read below
	all, err := getAll.Result()
	if err == nil {
		err = getPaused.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	paused := make(map[string]bool)
	for _, f := range getPaused.Val() {
		paused[f] = true
	}
	out := make([]kairos.Topic, 0, len(all))
	for field, raw := range all {
		if tenant != "" && !strings.HasPrefix(field, tenant+"/") {
			continue
		}
		t, err := decodeTopic(field, raw)
		if err != nil {
			return nil, err
		}
		t.Paused = paused[field]
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tenant != out[j].Tenant {
			return out[i].Tenant < out[j].Tenant
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// DeleteTopic removes a topic that holds no pending or dead jobs and no
// schedules; otherwise it returns kairos.ErrConflict saying how many
// remain. It is atomic against creates in the topic (layout.go, "Deleting
// a topic"): a job created at the same moment is either stored first, and
// the delete is a conflict, or refused as created in a deleted topic.
func (s *Store) DeleteTopic(ctx context.Context, tenant, name string) error {
	field := topicField(tenant, name)
	raw, err := s.c.HGet(ctx, s.k.topics(), field).Result()
	if isNil(err) {
		return fmt.Errorf("topic %q: %w", name, kairos.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("get topic %s: %w", field, err)
	}
	counts, err := s.Counts(ctx, tenant, name)
	if err != nil {
		return err
	}
	var left int64
	for _, st := range kairos.States {
		if st.Pending() || st == kairos.StateDead { // as topicretire.lua counts them
			left += counts[st]
		}
	}
	if left > 0 {
		return fmt.Errorf("%w: topic %q still holds %d pending or dead jobs; cancel them first", kairos.ErrConflict, name, left)
	}
	// A handle even for a topic that never had a job: a create may be
	// giving it one right now, and its shards must be retired under it.
	h, err := s.handle(ctx, tenant, name, true)
	if err != nil {
		return err
	}
	if err := s.retireTopic(ctx, name, h); err != nil {
		return err
	}
	removed, err := s.run(ctx, topicdelScript, []string{s.k.topics()}, field, raw).Int()
	s.topics.forget(field)
	if err == nil && removed == 0 {
		err = fmt.Errorf("%w: topic %q was changed while it was being deleted; try again", kairos.ErrConflict, name)
	}
	if err != nil {
		if rerr := s.restoreTopic(ctx, tenant, name); rerr != nil {
			return fmt.Errorf("delete topic %s: %w (and restoring it: %v)", field, err, rerr)
		}
		return fmt.Errorf("delete topic %s: %w", field, err)
	}
	if err := s.dropSubscriptions(ctx, tenant, name); err != nil {
		return err
	}
	return s.dropTopicKeys(ctx, tenant, name, h)
}

// retireTopic adds handle h to every shard's deleted topics, each shard
// only if the topic holds no pending or dead job and no schedule there;
// when a shard refuses, it takes h out of them all again and returns
// kairos.ErrConflict.
func (s *Store) retireTopic(ctx context.Context, name, h string) error {
	pipe := s.c.Pipeline()
	cmds := make([]*redis.Cmd, s.k.shards)
	for sh := range s.k.shards {
		cmds[sh] = s.call(ctx, pipe, topicretireScript, []string{s.k.gone(sh), s.k.counters(sh, h), s.k.scheduleIndex(sh, h)}, h)
	}
	_, err := pipe.Exec(ctx)
	if lostScript(err) {
		if err = s.loadScripts(ctx); err == nil {
			return s.retireTopic(ctx, name, h)
		}
	}
	var jobs, schedules int64
	for _, c := range cmds {
		if v, cerr := c.Int64Slice(); cerr == nil && len(v) == 2 {
			jobs, schedules = jobs+v[0], schedules+v[1]
		} else if err == nil {
			err = cerr
		}
	}
	if err == nil && jobs+schedules == 0 {
		return nil
	}
	if rerr := s.unretire(ctx, h); rerr != nil {
		return fmt.Errorf("retire topic %q: %w (and restoring it: %v)", name, cmp.Or(err, kairos.ErrConflict), rerr)
	}
	if err != nil {
		return fmt.Errorf("retire topic %q: %w", name, err)
	}
	if schedules > 0 {
		return fmt.Errorf("%w: topic %q still holds %d pending or dead jobs and %d schedules; cancel the jobs and delete the schedules first", kairos.ErrConflict, name, jobs, schedules)
	}
	return fmt.Errorf("%w: topic %q still holds %d pending or dead jobs; cancel them first", kairos.ErrConflict, name, jobs)
}

// restoreTopic takes a registered topic's handle out of every shard's
// deleted topics; a topic that never had a handle needs nothing.
func (s *Store) restoreTopic(ctx context.Context, tenant, name string) error {
	h, err := s.handle(ctx, tenant, name, false)
	if errors.Is(err, kairos.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.unretire(ctx, h)
}

func (s *Store) unretire(ctx context.Context, h string) error {
	pipe := s.c.Pipeline()
	for sh := range s.k.shards {
		pipe.SRem(ctx, s.k.gone(sh), h)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("restore topic handle %s: %w", h, err)
	}
	return nil
}

// dropTopicKeys removes what a deleted topic leaves: its ready list, and
// per shard its listing index and groups, counters and dead letters.
func (s *Store) dropTopicKeys(ctx context.Context, tenant, name, h string) error {
	// delivered jobs may still be listed through index groups, each a key
	var groups []string
	for sh := range s.k.shards {
		iter := s.c.ZScan(ctx, s.k.index(sh, h), 0, "#*", 1000).Iterator()
		for i := 0; iter.Next(ctx); i++ {
			if i%2 == 0 { // members and scores alternate
				groups = append(groups, s.k.groupPrefix(sh, h)+strings.TrimPrefix(iter.Val(), groupMark))
			}
		}
		if err := iter.Err(); err != nil {
			return fmt.Errorf("delete topic %s/%s: read its index: %w", tenant, name, err)
		}
	}
	pipe := s.c.Pipeline()
	for _, g := range groups {
		pipe.Del(ctx, g)
	}
	pipe.SRem(ctx, s.k.paused(), topicField(tenant, name))
	pipe.Publish(ctx, s.k.wake(), topicsChanged)
	pipe.Del(ctx, s.k.topicSigningKeys(tenant, name)) // a topic made again under its name gets new ones
	for sh := range s.k.shards {
		pipe.Del(ctx, s.k.readyList(sh, h))
		pipe.Del(ctx, s.k.index(sh, h))
		pipe.Del(ctx, s.k.counters(sh, h))
		pipe.Del(ctx, s.k.dead(sh, h))
		pipe.SRem(ctx, s.k.parkSet(sh), h)
		pipe.Del(ctx, s.k.parked(sh, h))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("delete topic %s/%s: %w", tenant, name, err)
	}
	return nil
}

// topicTTL is how long GetTopic trusts a topic it has read.
const topicTTL = time.Second

// topicCache keeps topics by tenant/name field until they expire. A read
// that began before a write (gen) is not stored after it, so a write
// cannot be undone by a slower reader of the old value.
type topicCache struct {
	mu    sync.RWMutex
	gen   uint64
	m     map[string]cachedTopic // made on first put
	sweep int                    // sweep out expired entries when m reaches this size
}

type cachedTopic struct {
	t       kairos.Topic
	expires time.Time // on the local monotonic clock
}

func (c *topicCache) get(field string) (kairos.Topic, bool) {
	c.mu.RLock()
	e, ok := c.m[field]
	c.mu.RUnlock()
	if !ok || !time.Now().Before(e.expires) {
		return kairos.Topic{}, false
	}
	e.t.Headers = maps.Clone(e.t.Headers) // callers may change theirs
	return e.t, true
}

func (c *topicCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

func (c *topicCache) put(field string, t kairos.Topic, gen uint64) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.m == nil {
		c.m = map[string]cachedTopic{}
	}
	if len(c.m) >= c.sweep {
		for f, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, f)
			}
		}
		c.sweep = max(2*len(c.m), 64)
	}
	c.m[field] = cachedTopic{t: t, expires: now.Add(topicTTL)}
}

func (c *topicCache) forget(field string) {
	c.mu.Lock()
	c.gen++
	delete(c.m, field)
	c.mu.Unlock()
}
