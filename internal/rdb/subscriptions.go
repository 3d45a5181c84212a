package rdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/kairos-sh/kairos"
)

// A topic's subscriptions (fan-out) live apart from its jobs, under the
// topic's own hash tag (keys.go, "Fan-out keys"):
//
//	P:subs:{<tenant>/<topic>}            HASH  name -> the subscription's settings (subscriptionRecord, JSON)
//	P:subs:{<tenant>/<topic>}:paused     SET   its paused subscriptions
//	P:subs:{<tenant>/<topic>}:n          HASH  "<sub>:p|d|x" -> its deliveries pending, delivered, dead;
//	                                           "<sub>:g" -> its incarnation (created_at, ms): whose deliveries count
//	P:subs:{<tenant>/<topic>}:park:<sub> ZSET  a paused subscription's parked deliveries: id -> run_at (ms)
//	P:signing:{<tenant>}:<topic>/<sub>   HASH  its own secrets (signing: subscription), current and next
//
// A delivery is an ordinary job of the topic (kairos.DeliveryOf); nothing
// here is read per job but the parked set, and that only while paused.

// subscriptionRecord is a subscription as stored: short names, as a
// subscription should take well under a kilobyte of Redis.
type subscriptionRecord struct {
	URL           string            `json:"u"`
	EventTypes    []string          `json:"et,omitempty"`
	Filter        json.RawMessage   `json:"f,omitempty"`
	Headers       map[string]string `json:"h,omitempty"`
	Method        string            `json:"m,omitempty"`
	TimeoutMS     int64             `json:"t,omitempty"`
	MaxAttempts   int               `json:"a,omitempty"`
	BackoffInitMS int64             `json:"bi,omitempty"`
	BackoffMaxMS  int64             `json:"bm,omitempty"`
	RateLimit     int               `json:"rl,omitempty"`
	RatePeriodMS  int64             `json:"rp,omitempty"`
	Parallelism   int               `json:"p,omitempty"`
	BreakerFails  int               `json:"bf,omitempty"`
	BreakerCoolMS int64             `json:"bc,omitempty"`
	Description   string            `json:"d,omitempty"`
	Signing       string            `json:"s,omitempty"` // "" is kairos.SigningTopic
	CreatedMS     int64             `json:"c"`
	UpdatedMS     int64             `json:"up"`
}

// MaxSubscriptionRecord bounds a subscription's stored settings (its URL,
// headers, filter and description together).
const MaxSubscriptionRecord = 16 << 10

func encodeSubscription(s kairos.Subscription) ([]byte, error) {
	signing := ""
	if s.Signing == kairos.SigningSubscription {
		signing = kairos.SigningSubscription
	}
	b, err := json.Marshal(subscriptionRecord{
		URL: s.URL, EventTypes: s.EventTypes, Filter: s.Filter, Headers: s.Headers, Method: s.Method,
		TimeoutMS: s.Timeout.Milliseconds(), MaxAttempts: s.MaxAttempts,
		BackoffInitMS: s.BackoffInitial.Milliseconds(), BackoffMaxMS: s.BackoffMax.Milliseconds(),
		RateLimit: s.RateLimit, RatePeriodMS: s.RatePeriod.Milliseconds(), Parallelism: s.Parallelism,
		BreakerFails: s.BreakerFailures, BreakerCoolMS: s.BreakerCooldown.Milliseconds(),
		Description: s.Description, Signing: signing, CreatedMS: ms(s.CreatedAt), UpdatedMS: ms(s.UpdatedAt),
	})
	if err == nil && len(b) > MaxSubscriptionRecord {
		err = fmt.Errorf("%w: subscription %q takes %d bytes; its URL, headers, filter and description may take %d together",
			kairos.ErrInvalid, s.Name, len(b), MaxSubscriptionRecord)
	}
	return b, err
}

func decodeSubscription(tenant, topic, name, raw string) (kairos.Subscription, error) {
	var r subscriptionRecord
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return kairos.Subscription{}, fmt.Errorf("decode subscription %s/%s/%s: %w", tenant, topic, name, err)
	}
	d := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return kairos.Subscription{Tenant: tenant, Topic: topic, Name: name, URL: r.URL, EventTypes: r.EventTypes,
		Filter: r.Filter, Headers: r.Headers, Method: r.Method, Timeout: d(r.TimeoutMS), MaxAttempts: r.MaxAttempts,
		BackoffInitial: d(r.BackoffInitMS), BackoffMax: d(r.BackoffMaxMS), RateLimit: r.RateLimit,
		RatePeriod: d(r.RatePeriodMS), Parallelism: r.Parallelism, BreakerFailures: r.BreakerFails,
		BreakerCooldown: d(r.BreakerCoolMS), Description: r.Description, Signing: r.Signing,
		CreatedAt: fromMS(r.CreatedMS), UpdatedAt: fromMS(r.UpdatedMS)}, nil
}

// PutSubscription registers or replaces a subscription of a topic, which
// it registers (EnsureTopic) when it has none yet; it reports whether the
// subscription is new. Its paused state is kept (PauseSubscription changes
// it), or, when paused is not nil, set to *paused. A subscription that
// signs with its own secret gets its keys now, not at its first delivery.
func (s *Store) PutSubscription(ctx context.Context, sub kairos.Subscription, paused *bool) (kairos.Subscription, bool, error) {
	if err := s.EnsureTopic(ctx, sub.Tenant, sub.Topic); err != nil {
		return kairos.Subscription{}, false, err
	}
	old, err := s.GetSubscription(ctx, sub.Tenant, sub.Topic, sub.Name)
	created := errors.Is(err, kairos.ErrNotFound)
	if err != nil && !created {
		return kairos.Subscription{}, false, err
	}
	now := s.Now()
	sub.CreatedAt, sub.UpdatedAt, sub.Paused = now, now, false
	if !created {
		sub.CreatedAt, sub.Paused = old.CreatedAt, old.Paused
	}
	raw, err := encodeSubscription(sub)
	if err != nil {
		return kairos.Subscription{}, false, err
	}
	if sub.Signing == kairos.SigningSubscription && s.opts.NewSecret != nil {
		if _, err := s.GetSubscriptionSigningKeys(ctx, sub.Tenant, sub.Topic, sub.Name); err != nil {
			return kairos.Subscription{}, false, err
		}
	}
	if created {
		// a new incarnation of the name: its counts start at zero, and
		// count only deliveries made from now (subcount.lua)
		pipe := s.c.TxPipeline()
		pipe.HSet(ctx, s.k.subscriptions(sub.Tenant, sub.Topic), sub.Name, raw)
		counts := s.k.subscriptionCounts(sub.Tenant, sub.Topic)
		pipe.HDel(ctx, counts, sub.Name+countPending, sub.Name+countDelivered, sub.Name+countDead)
		pipe.HSet(ctx, counts, sub.Name+countBorn, ms(sub.CreatedAt))
		_, err = pipe.Exec(ctx)
	} else {
		err = s.c.HSet(ctx, s.k.subscriptions(sub.Tenant, sub.Topic), sub.Name, raw).Err()
	}
	s.subs.forget(topicField(sub.Tenant, sub.Topic))
	if err != nil {
		return kairos.Subscription{}, false, fmt.Errorf("put subscription %s/%s/%s: %w", sub.Tenant, sub.Topic, sub.Name, err)
	}
	if paused != nil && *paused != sub.Paused {
		if sub, err = s.PauseSubscription(ctx, sub.Tenant, sub.Topic, sub.Name, *paused); err != nil {
			return kairos.Subscription{}, false, err
		}
	}
	sub.CreatedAt, sub.UpdatedAt = fromMS(ms(sub.CreatedAt)), fromMS(ms(sub.UpdatedAt))
	return sub, created, nil
}

// GetSubscription reads a subscription from Redis (past the cache that
// Subscriptions keeps), or returns kairos.ErrNotFound.
func (s *Store) GetSubscription(ctx context.Context, tenant, topic, name string) (kairos.Subscription, error) {
	pipe := s.c.Pipeline()
	get := pipe.HGet(ctx, s.k.subscriptions(tenant, topic), name)
	paused := pipe.SIsMember(ctx, s.k.subscriptionsPaused(tenant, topic), name)
	_, _ = pipe.Exec(ctx) // each command's error is read below
	raw, err := get.Result()
	if isNil(err) {
		return kairos.Subscription{}, fmt.Errorf("subscription %q of topic %q: %w", name, topic, kairos.ErrNotFound)
	}
	if err == nil {
		err = paused.Err()
	}
	if err != nil {
		return kairos.Subscription{}, fmt.Errorf("get subscription %s/%s/%s: %w", tenant, topic, name, err)
	}
	sub, err := decodeSubscription(tenant, topic, name, raw)
	sub.Paused = paused.Val()
	return sub, err
}

// ListSubscriptions reads a topic's subscriptions from Redis, by name.
func (s *Store) ListSubscriptions(ctx context.Context, tenant, topic string) ([]kairos.Subscription, error) {
	pipe := s.c.Pipeline()
	all := pipe.HGetAll(ctx, s.k.subscriptions(tenant, topic))
	paused := pipe.SMembers(ctx, s.k.subscriptionsPaused(tenant, topic))
	_, _ = pipe.Exec(ctx)
	err := all.Err()
	if err == nil {
		err = paused.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("list subscriptions of %s/%s: %w", tenant, topic, err)
	}
	out := make([]kairos.Subscription, 0, len(all.Val()))
	for name, raw := range all.Val() {
		sub, err := decodeSubscription(tenant, topic, name, raw)
		if err != nil {
			return nil, err
		}
		sub.Paused = slices.Contains(paused.Val(), name)
		out = append(out, sub)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Subscriptions returns a topic's subscriptions, by name, as ListSubscriptions
// read them at most topicTTL ago: a publish and a delivery read Redis for
// them once a second a topic at most. This Store's writes show at once,
// another process's up to topicTTL late, as for GetTopic. The slice and
// its subscriptions are shared: callers must not change them.
func (s *Store) Subscriptions(ctx context.Context, tenant, topic string) ([]kairos.Subscription, error) {
	field := topicField(tenant, topic)
	if subs, ok := s.subs.get(field); ok {
		return subs, nil
	}
	gen := s.subs.generation()
	subs, err := s.ListSubscriptions(ctx, tenant, topic)
	if err == nil {
		s.subs.put(field, subs, gen)
	}
	return subs, err
}

// Subscription returns one of a topic's subscriptions as Subscriptions
// has it, or kairos.ErrNotFound.
func (s *Store) Subscription(ctx context.Context, tenant, topic, name string) (kairos.Subscription, error) {
	subs, err := s.Subscriptions(ctx, tenant, topic)
	if err != nil {
		return kairos.Subscription{}, err
	}
	i, ok := slices.BinarySearchFunc(subs, name, func(s kairos.Subscription, n string) int {
		switch {
		case s.Name < n:
			return -1
		case s.Name > n:
			return 1
		}
		return 0
	})
	if !ok {
		return kairos.Subscription{}, fmt.Errorf("subscription %q of topic %q: %w", name, topic, kairos.ErrNotFound)
	}
	sub := subs[i]
	sub.Headers = maps.Clone(sub.Headers)
	return sub, nil
}

// DeleteSubscription removes a subscription with its counts, parked set
// and own secrets, or returns kairos.ErrNotFound. Its deliveries stay jobs
// of the topic: the caller cancels those still pending (the label
// kairos.LabelSubscription selects them).
func (s *Store) DeleteSubscription(ctx context.Context, tenant, topic, name string) error {
	pipe := s.c.TxPipeline()
	del := pipe.HDel(ctx, s.k.subscriptions(tenant, topic), name)
	pipe.SRem(ctx, s.k.subscriptionsPaused(tenant, topic), name)
	pipe.HDel(ctx, s.k.subscriptionCounts(tenant, topic), name+countPending, name+countDelivered, name+countDead, name+countBorn)
	pipe.Del(ctx, s.k.parkedDeliveries(tenant, topic, name))
	_, err := pipe.Exec(ctx)
	s.subs.forget(topicField(tenant, topic))
	if err != nil {
		return fmt.Errorf("delete subscription %s/%s/%s: %w", tenant, topic, name, err)
	}
	if del.Val() == 0 {
		return fmt.Errorf("subscription %q of topic %q: %w", name, topic, kairos.ErrNotFound)
	}
	// made again under its name, it gets new ones
	if err := s.c.Del(ctx, s.k.subscriptionSigningKeys(tenant, topic, name)).Err(); err != nil {
		return fmt.Errorf("delete subscription %s/%s/%s: its signing keys: %w", tenant, topic, name, err)
	}
	return nil
}

// dropSubscriptions deletes every subscription of a deleted topic.
func (s *Store) dropSubscriptions(ctx context.Context, tenant, topic string) error {
	names, err := s.c.HKeys(ctx, s.k.subscriptions(tenant, topic)).Result()
	if err != nil {
		return fmt.Errorf("delete topic %s/%s: its subscriptions: %w", tenant, topic, err)
	}
	pipe := s.c.Pipeline()
	for _, n := range names {
		pipe.Del(ctx, s.k.parkedDeliveries(tenant, topic, n))
		pipe.Del(ctx, s.k.subscriptionSigningKeys(tenant, topic, n))
	}
	pipe.Del(ctx, s.k.subscriptions(tenant, topic), s.k.subscriptionsPaused(tenant, topic), s.k.subscriptionCounts(tenant, topic))
	_, err = pipe.Exec(ctx)
	s.subs.forget(topicField(tenant, topic))
	if err != nil {
		return fmt.Errorf("delete topic %s/%s: its subscriptions: %w", tenant, topic, err)
	}
	return nil
}

// ParkFor is how far ahead a worker gives back a delivery of a paused
// subscription (ParkDelivery): it waits there, parked, costing nothing,
// until resume files it again, or, paused that long, comes due and is
// parked again.
const ParkFor = 30 * 24 * time.Hour

// ParkDelivery records delivery id (of run_at runAt) of subscription sub
// as parked, when sub is still paused: the worker has given it back to be
// due kairos.ParkFor from now, and resume files it again at runAt. It reports
// false when sub is not paused any more: the caller files it again itself
// (RefileDelivery). Park and resume are atomic against each other, so a
// delivery is never left parked by a resume that came between.
func (s *Store) ParkDelivery(ctx context.Context, tenant, topic, sub, id string, runAt time.Time) (bool, error) {
	n, err := s.run(ctx, subparkScript, []string{s.k.subscriptionsPaused(tenant, topic), s.k.parkedDeliveries(tenant, topic, sub)},
		sub, id, ms(runAt)).Int()
	if err != nil {
		return false, fmt.Errorf("park delivery %s/%s/%s: %w", tenant, topic, id, err)
	}
	return n == 1, nil
}

// RefileDelivery moves a delivery given back parked to its run_at: due at
// once when that is past. A delivery that has fired, ended or gone
// meanwhile is left as it is.
func (s *Store) RefileDelivery(ctx context.Context, key kairos.JobKey, runAt time.Time) error {
	_, err := s.Reschedule(ctx, key, runAt)
	if errors.Is(err, kairos.ErrNotFound) || errors.Is(err, kairos.ErrConflict) {
		return nil
	}
	return err
}

// refileBatch is how many parked deliveries a resume files again at once.
const refileBatch = 200

// PauseSubscription pauses or resumes a subscription and returns it, or
// kairos.ErrNotFound. A paused subscription's deliveries do not fire: a
// worker that meets one gives it back parked (ParkDelivery), and resume
// files the parked ones again at their run_at (due at once when past),
// before it returns.
func (s *Store) PauseSubscription(ctx context.Context, tenant, topic, name string, pause bool) (kairos.Subscription, error) {
	n, err := s.run(ctx, subpauseScript, []string{s.k.subscriptions(tenant, topic), s.k.subscriptionsPaused(tenant, topic)},
		name, b2n(pause)).Int()
	s.subs.forget(topicField(tenant, topic))
	if err != nil {
		return kairos.Subscription{}, fmt.Errorf("pause subscription %s/%s/%s: %w", tenant, topic, name, err)
	}
	if n == 0 {
		return kairos.Subscription{}, fmt.Errorf("subscription %q of topic %q: %w", name, topic, kairos.ErrNotFound)
	}
	if !pause {
		if err := s.refileParked(ctx, tenant, topic, name); err != nil {
			return kairos.Subscription{}, err
		}
	}
	return s.GetSubscription(ctx, tenant, topic, name)
}

// refileParked files a resumed subscription's parked deliveries again, a
// batch at a time; one that fails stays parked, to be filed by the next
// resume (or, unpaused, to fire when its park ends).
func (s *Store) refileParked(ctx context.Context, tenant, topic, name string) error {
	key := s.k.parkedDeliveries(tenant, topic, name)
	for {
		zs, err := s.c.ZRangeWithScores(ctx, key, 0, refileBatch-1).Result()
		if err != nil {
			return fmt.Errorf("resume subscription %s/%s/%s: read its parked deliveries: %w", tenant, topic, name, err)
		}
		if len(zs) == 0 {
			return nil
		}
		var wg sync.WaitGroup
		errs := make([]error, len(zs))
		sem := make(chan struct{}, 8)
		for i, z := range zs {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				id, _ := z.Member.(string)
				errs[i] = s.RefileDelivery(ctx, kairos.JobKey{Tenant: tenant, Topic: topic, ID: id}, fromMS(int64(z.Score)))
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("resume subscription %s/%s/%s: %w", tenant, topic, name, err)
		}
		members := make([]any, len(zs))
		for i, z := range zs {
			members[i] = z.Member
		}
		if err := s.c.ZRem(ctx, key, members...).Err(); err != nil {
			return fmt.Errorf("resume subscription %s/%s/%s: %w", tenant, topic, name, err)
		}
	}
}

// Parked returns how many deliveries of a subscription are parked.
func (s *Store) Parked(ctx context.Context, tenant, topic, name string) (int64, error) {
	return s.c.ZCard(ctx, s.k.parkedDeliveries(tenant, topic, name)).Result()
}

// SubscriptionCounts are a subscription's deliveries by what became of
// them: pending (published, not yet ended), delivered, dead (dead now:
// a replay takes one back to pending).
type SubscriptionCounts struct {
	Pending, Delivered, Dead int64
}

// The fields of a subscription's counts: "<sub>" and one of these.
const (
	countPending   = ":p"
	countDelivered = ":d"
	countDead      = ":x"
	countBorn      = ":g" // its incarnation: the created_at (ms) of the subscription the counts are of
)

// DeliveryMove is one delivery's move in its subscription's counts.
type DeliveryMove struct {
	Subscription string
	// Born is the delivery's job's creation time (kairos.Job.CreatedAt):
	// a move counts only when the subscription of the name was created
	// at or before it, so that a delivery of a subscription deleted and
	// put again moves nothing in the new one's counts.
	Born time.Time
	SubscriptionCounts
}

// CountsMove is how a delivery's cancel (to kairos.StateCancelled) or
// replay (to a pending state) from state from moves its subscription's
// counts: a pending one cancelled leaves pending, a dead one cancelled
// leaves dead, a dead one replayed goes from dead to pending, an expired
// one replayed (expired counts nowhere) joins pending.
func CountsMove(from, to kairos.State) SubscriptionCounts {
	switch {
	case to == kairos.StateCancelled && from.Pending():
		return SubscriptionCounts{Pending: -1}
	case to == kairos.StateCancelled && from == kairos.StateDead:
		return SubscriptionCounts{Dead: -1}
	case to.Pending() && from == kairos.StateDead:
		return SubscriptionCounts{Dead: -1, Pending: 1}
	case to.Pending() && from == kairos.StateExpired:
		return SubscriptionCounts{Pending: 1}
	}
	return SubscriptionCounts{}
}

// CountDeliveries moves deliveries of a topic in their subscriptions'
// counts, in one script (subcount.lua): a move whose subscription is gone,
// or is another incarnation of its name (DeliveryMove.Born), counts
// nowhere. The publish, the worker that ends a delivery, cancels and
// replays (single and bulk) keep them, so reading them costs no scan.
func (s *Store) CountDeliveries(ctx context.Context, tenant, topic string, moves []DeliveryMove) error {
	args := make([]any, 0, 5*len(moves))
	for _, m := range moves {
		if m.SubscriptionCounts == (SubscriptionCounts{}) {
			continue
		}
		args = m.args(args)
	}
	if len(args) == 0 {
		return nil
	}
	err := s.run(ctx, subcountScript, []string{s.k.subscriptions(tenant, topic), s.k.subscriptionCounts(tenant, topic)}, args...).Err()
	if err != nil {
		return fmt.Errorf("count deliveries of %s/%s: %w", tenant, topic, err)
	}
	return nil
}

// args appends m as subcount.lua takes a move: five arguments.
func (m DeliveryMove) args(to []any) []any {
	return append(to, m.Subscription, ms(m.Born), m.Pending, m.Delivered, m.Dead)
}

// SubscriptionCountsOf reads the counts of a topic's subscriptions, by
// name (a subscription with none has zero counts); never below zero.
func (s *Store) SubscriptionCountsOf(ctx context.Context, tenant, topic string) (map[string]SubscriptionCounts, error) {
	all, err := s.c.HGetAll(ctx, s.k.subscriptionCounts(tenant, topic)).Result()
	if err != nil {
		return nil, fmt.Errorf("read subscription counts of %s/%s: %w", tenant, topic, err)
	}
	out := map[string]SubscriptionCounts{}
	for f, v := range all {
		n, _ := strconv.ParseInt(v, 10, 64)
		n = max(n, 0)
		if len(f) < 3 {
			continue
		}
		name, suffix := f[:len(f)-2], f[len(f)-2:]
		c := out[name]
		switch suffix {
		case countPending:
			c.Pending = n
		case countDelivered:
			c.Delivered = n
		case countDead:
			c.Dead = n
		default:
			continue
		}
		out[name] = c
	}
	return out, nil
}

// GetSubscriptionSigningKeys returns a subscription's own secrets,
// creating them on first use. Whether it signs with them is its Signing.
func (s *Store) GetSubscriptionSigningKeys(ctx context.Context, tenant, topic, sub string) (SigningKeys, error) {
	return s.signingKeysAt(ctx, s.k.subscriptionSigningKeys(tenant, topic, sub))
}

// RotateSubscriptionSigningKeys makes the Next of a subscription's own
// secrets current and draws a new Next.
func (s *Store) RotateSubscriptionSigningKeys(ctx context.Context, tenant, topic, sub string) (SigningKeys, error) {
	return s.rotateAt(ctx, s.k.subscriptionSigningKeys(tenant, topic, sub))
}

// subscriptionCache keeps topics' subscriptions by tenant/topic field for
// topicTTL, as topicCache keeps topics: a read begun before a write (gen)
// is not stored after it.
type subscriptionCache struct {
	mu  sync.RWMutex
	gen uint64
	m   map[string]cachedSubscriptions
}

type cachedSubscriptions struct {
	subs    []kairos.Subscription
	expires time.Time // on the local monotonic clock
}

func (c *subscriptionCache) get(field string) ([]kairos.Subscription, bool) {
	c.mu.RLock()
	e, ok := c.m[field]
	c.mu.RUnlock()
	if !ok || !time.Now().Before(e.expires) {
		return nil, false
	}
	return e.subs, true
}

func (c *subscriptionCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

func (c *subscriptionCache) put(field string, subs []kairos.Subscription, gen uint64) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.m == nil {
		c.m = map[string]cachedSubscriptions{}
	}
	if len(c.m) >= 1024 {
		for f, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, f)
			}
		}
	}
	c.m[field] = cachedSubscriptions{subs: subs, expires: now.Add(topicTTL)}
}

func (c *subscriptionCache) forget(field string) {
	c.mu.Lock()
	c.gen++
	delete(c.m, field)
	c.mu.Unlock()
}

// DeliveryEnded counts in its subscription's counts that delivery j of sub
// ended in state st (delivered, dead or expired), as the worker recorded
// it; nothing when sub is gone or was put again since j was made. The ends
// that come together are counted together: one script call a topic for
// all of them, as outcomes are recorded (a call's own cost in Redis is
// many times a move's).
func (s *Store) DeliveryEnded(ctx context.Context, j kairos.Job, sub string, st kairos.State) error {
	d := SubscriptionCounts{Pending: -1}
	switch st {
	case kairos.StateDelivered:
		d.Delivered = 1
	case kairos.StateDead:
		d.Dead = 1
	case kairos.StateExpired:
	default:
		return nil
	}
	e := &deliveryEnd{ctx: ctx, tenant: j.Tenant, topic: j.Topic, done: make(chan struct{}),
		move: DeliveryMove{Subscription: sub, Born: j.CreatedAt, SubscriptionCounts: d}}
	s.ends.do(e)
	if err := await(ctx, e.done); err != nil {
		return err
	}
	return e.err
}

// deliveryEnd is a delivery's end waiting to be counted (DeliveryEnded).
type deliveryEnd struct {
	ctx           context.Context
	tenant, topic string
	move          DeliveryMove
	err           error
	done          chan struct{}
}

// writeDeliveryEnds counts a batch of delivery ends: one subcount call a
// topic, the calls in one round trip.
func (s *Store) writeDeliveryEnds(batch []*deliveryEnd) {
	ctx, cancel := batchContext(batch[0].ctx)
	defer cancel()
	type topicEnds struct {
		tenant, topic string
		ends          []*deliveryEnd
	}
	var topics []*topicEnds
	byTopic := map[kairos.JobKey]*topicEnds{}
	for _, e := range batch {
		k := kairos.JobKey{Tenant: e.tenant, Topic: e.topic}
		t := byTopic[k]
		if t == nil {
			t = &topicEnds{tenant: e.tenant, topic: e.topic}
			byTopic[k] = t
			topics = append(topics, t)
		}
		t.ends = append(t.ends, e)
	}
	cmds := s.evalAll(ctx, subcountScript, len(topics), func(i int) ([]string, []any) {
		t := topics[i]
		args := make([]any, 0, 5*len(t.ends))
		for _, e := range t.ends {
			args = e.move.args(args)
		}
		return []string{s.k.subscriptions(t.tenant, t.topic), s.k.subscriptionCounts(t.tenant, t.topic)}, args
	})
	for i, t := range topics {
		err := cmds[i].Err()
		if err != nil {
			err = fmt.Errorf("count deliveries of %s/%s: %w", t.tenant, t.topic, err)
		}
		for _, e := range t.ends {
			e.err = err
			close(e.done)
		}
	}
}

// endsBatch is the most delivery ends a batch counts; endsLinger how long
// an end that finds no count under way waits for company.
const (
	endsBatch  = 500
	endsLinger = outcomeLinger
)
