// Package rdb owns kairos's Redis data model: key names, the Lua scripts that
// change job states atomically, and the small Go API the rest of kairos calls.
// No other package spells a Redis key.
package rdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/schedule"
)

// Options configure a Store. Zero values take the defaults.
type Options struct {
	Prefix     string        // key prefix; default "kairos"
	Shards     int           // Delay Bucket shards; 0: as recorded in Redis, or on a fresh one DefaultShards (DefaultClusterShards on a cluster)
	Retention  time.Duration // how long delivered jobs stay readable; default 24h
	ReadyLease time.Duration // how long past its due time a claimed job may wait to start before its lease lapses; default 10s
	LeaseGrace time.Duration // added to a callback timeout to make its lease; default 5s
	// Blocking is the client of the workers' blocking pops (BLMPOP; BRPOP
	// on a Redis without it), kept apart so that blocked consumers cannot
	// take the connections API calls need. Default: the main client.
	Blocking redis.UniversalClient
	// Now overrides the Redis-synchronised clock (tests); scripts then use
	// it too instead of Redis's TIME.
	Now func() time.Time
	// ClockSkew is added to the measured offset from Redis's clock. Tests
	// use it to play a machine whose clock sync went wrong.
	ClockSkew time.Duration
	// NewSecret draws a tenant's callback signing secret on first use
	// (callback.NewSecret); required for signing keys.
	NewSecret func() (string, error)
	// WaitReplicas, when above 0, makes every create wait (Redis WAIT)
	// until that many replicas of its master have it, up to WaitTimeout
	// (default 500ms), before it is acknowledged.
	WaitReplicas int
	WaitTimeout  time.Duration
	// OnEnqueued, if set, is told of every job stored by Enqueue or EnqueueBatch (metrics).
	OnEnqueued func(tenant, topic string)
	// Patterns parses a schedule's recurrence; default internal/schedule's
	// (schedule.Of). Tests of the storage set simpler ones.
	Patterns func(kairos.Schedule) (Pattern, error)
}

// Defaults for Options.
const (
	DefaultPrefix = "kairos"
	DefaultShards = 4
	// DefaultClusterShards is the default on a Redis Cluster: its shards
	// spread over the cluster's masters (one hash slot each).
	DefaultClusterShards = 16
	DefaultRetention     = 24 * time.Hour
	DefaultLeaseGrace    = 5 * time.Second
)

// Store is kairos's Redis data model. It is safe for concurrent use.
type Store struct {
	c         redis.UniversalClient
	blocking  redis.UniversalClient
	k         keys
	opts      Options
	offset    atomic.Int64             // Redis clock minus local clock, in ns
	outcomes  batcher[*pendingOutcome] // outcomes waiting to be written together (Finish)
	creates   batcher[*create]         // single creates waiting to be written together
	topics    topicCache               // topics GetTopic read recently
	handles   handleCache              // topic handles this Store has read
	functions atomic.Bool              // the scripts run as the function library (FCALL), not with EVALSHA
	noBLMPop  atomic.Bool              // the server lacks BLMPOP: pop with BRPOP and RPOP
	pops      atomic.Int64             // pops made, to take the shards of a pop in turn
	idSalt    []byte                   // the deployment's webhook id salt, read by Init
	id        string                   // this Store's own name, for its interrupt lists
	locks     *redsync.Redsync         // the scanners' shard mutexes
	replicas  replicaWatch             // the replicas each master had, for creates waiting on them

	subs subscriptionCache     // topics' subscriptions Subscriptions read recently (fan-out)
	ends batcher[*deliveryEnd] // deliveries' ends waiting to be counted together
}

// New returns a Store over c. Call Init before using it.
func New(c redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Shards < 0 {
		opts.Shards = 0
	}
	shards := opts.Shards
	if shards == 0 {
		shards = DefaultShards // until Init reads the recorded count
	}
	if opts.Patterns == nil {
		opts.Patterns = func(sc kairos.Schedule) (Pattern, error) { return schedule.Of(sc) }
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.ReadyLease <= 0 {
		opts.ReadyLease = kairos.DefaultReadyLease
	}
	if opts.LeaseGrace <= 0 {
		opts.LeaseGrace = DefaultLeaseGrace
	}
	if opts.WaitTimeout <= 0 {
		opts.WaitTimeout = 500 * time.Millisecond
	}
	if opts.Blocking == nil {
		opts.Blocking = c
	}
	s := &Store{c: c, blocking: opts.Blocking, k: keys{prefix: opts.Prefix, shards: shards}, opts: opts}
	s.outcomes.write = s.writeOutcomes
	s.outcomes.linger, s.outcomes.lingerMax = outcomeLinger, outcomeBatch
	var b [8]byte
	rand.Read(b[:])
	s.id = hex.EncodeToString(b[:])
	s.locks = redsync.New(newLockPool(s))
	s.creates.write = s.writeCreates
	s.ends.write = s.writeDeliveryEnds
	s.ends.linger, s.ends.lingerMax = endsLinger, endsBatch
	return s
}

// Shards returns the number of Delay Bucket shards (known once Init has run).
func (s *Store) Shards() int { return s.k.shards }

// Client returns the main Redis client (for locks and health checks).
func (s *Store) Client() redis.UniversalClient { return s.c }

// ErrShardMismatch is returned by Init when Redis holds jobs sharded differently.
var ErrShardMismatch = errors.New("shard count mismatch")

// Init records the shard count at first start and refuses a different one
// later: jobs would otherwise sit in shards no scanner reads (a Store
// given no count takes the recorded one). It refuses a Redis that holds
// another layout (initLayout), loads the scripts, and synchronises the
// clock with Redis.
func (s *Store) Init(ctx context.Context) error {
	if err := s.initLayout(ctx); err != nil {
		return err
	}
	if err := s.initShards(ctx); err != nil {
		return err
	}
	if err := s.initSalt(ctx); err != nil {
		return err
	}
	if err := s.loadScripts(ctx); err != nil {
		return err
	}
	if err := s.initTenantPending(ctx); err != nil {
		return err
	}
	return s.SyncClock(ctx)
}

// initShards records the shard count in a fresh Redis (the configured one,
// or the default for the kind of Redis) and adopts or checks the recorded
// one.
func (s *Store) initShards(ctx context.Context) error {
	n := s.opts.Shards
	if n == 0 {
		n = DefaultShards
		if _, ok := s.c.(*redis.ClusterClient); ok {
			n = DefaultClusterShards
		}
	}
	if _, err := s.c.HSetNX(ctx, s.k.meta(), "shards", strconv.Itoa(n)).Result(); err != nil {
		return fmt.Errorf("record shard count: %w", err)
	}
	got, err := s.c.HGet(ctx, s.k.meta(), "shards").Result()
	if err != nil {
		return fmt.Errorf("read shard count: %w", err)
	}
	recorded, err := strconv.Atoi(got)
	if err != nil || recorded < 1 {
		return fmt.Errorf("%w: Redis (prefix %q) records %q shards, not a count", ErrShardMismatch, s.k.prefix, got)
	}
	if s.opts.Shards != 0 && recorded != s.opts.Shards {
		return fmt.Errorf("%w: Redis (prefix %q) was set up with %d shards, this process is configured with %d; "+
			"start it with KAIROS_SHARDS=%d or leave KAIROS_SHARDS unset (changing the count would strand scheduled jobs)",
			ErrShardMismatch, s.k.prefix, recorded, s.opts.Shards, recorded)
	}
	s.k.shards = recorded
	return nil
}

// ErrLayout is returned by Init when Redis holds kairos data in a layout
// this version does not read.
var ErrLayout = errors.New("data layout mismatch")

// initLayout records LayoutVersion in a Redis that holds no kairos data
// under the prefix, and refuses one that holds data in another layout:
// reading it as this one would misread every job.
func (s *Store) initLayout(ctx context.Context) error {
	got, err := s.c.HGet(ctx, s.k.meta(), "layout").Result()
	if isNil(err) {
		var v1 bool
		if v1, err = s.c.HExists(ctx, s.k.meta(), "shards").Result(); err == nil && v1 {
			got = "1" // layout 1 recorded no version
		} else if err == nil {
			if _, err = s.c.HSetNX(ctx, s.k.meta(), "layout", LayoutVersion).Result(); err == nil {
				got, err = s.c.HGet(ctx, s.k.meta(), "layout").Result()
			}
		}
	}
	if err != nil {
		return fmt.Errorf("read data layout: %w", err)
	}
	if v, _ := strconv.Atoi(got); v >= migrateFrom && v < LayoutVersion {
		return fmt.Errorf("%w: Redis (prefix %q) holds kairos data in layout %s; this kairos reads and writes layout %d. "+
			"Stop every kairos of the earlier version and run `kairos migrate` with the same KAIROS_REDIS_URL and KAIROS_PREFIX "+
			"(see docs/operations.md#upgrading)", ErrLayout, s.k.prefix, got, LayoutVersion)
	}
	if got != strconv.Itoa(LayoutVersion) {
		return fmt.Errorf("%w: Redis (prefix %q) holds kairos data in layout %s; this kairos reads and writes layout %d. "+
			"Run the kairos version that wrote it until its jobs are done, or start this one with another KAIROS_PREFIX "+
			"(see docs/operations.md#upgrading)", ErrLayout, s.k.prefix, got, LayoutVersion)
	}
	return nil
}

// initSalt reads the deployment's webhook id salt, made at first start:
// jobs of the same key and creation time in two deployments that share
// receivers still get different webhook ids.
func (s *Store) initSalt(ctx context.Context) error {
	var b [16]byte
	rand.Read(b[:])
	if err := s.c.HSetNX(ctx, s.k.meta(), "webhook_id_salt", hex.EncodeToString(b[:])).Err(); err != nil {
		return fmt.Errorf("record webhook id salt: %w", err)
	}
	salt, err := s.c.HGet(ctx, s.k.meta(), "webhook_id_salt").Result()
	if err != nil {
		return fmt.Errorf("read webhook id salt: %w", err)
	}
	s.idSalt = []byte(salt)
	return nil
}

// SyncClock measures the offset between this machine's clock and Redis's
// TIME, so that every process schedules and scans on the one Redis clock.
func (s *Store) SyncClock(ctx context.Context) error {
	if s.opts.Now != nil {
		return nil
	}
	best := time.Duration(1<<63 - 1)
	for range 3 {
		t0 := time.Now()
		rt, err := s.c.Time(ctx).Result()
		if err != nil {
			return fmt.Errorf("read redis time: %w", err)
		}
		rtt := time.Since(t0)
		if rtt < best {
			best = rtt
			// Redis read its clock somewhere within the round trip; taking
			// its end keeps this process's estimate of Redis's time at or
			// behind the real one, so a timer set by it never fires early.
			s.offset.Store(int64(rt.Sub(t0.Add(rtt))))
		}
	}
	return nil
}

// Now returns the current time on the Redis clock.
func (s *Store) Now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now().Add(time.Duration(s.offset.Load()) + s.opts.ClockSkew)
}

// Local converts a time on the Redis clock to this machine's clock, for timers.
func (s *Store) Local(t time.Time) time.Time {
	return t.Add(-time.Duration(s.offset.Load()) - s.opts.ClockSkew)
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error { return s.c.Ping(ctx).Err() }

// ErrNotMaster is returned by Writable when the node kairos writes to is a
// replica: writes would fail with READONLY.
var ErrNotMaster = errors.New("the Redis node kairos writes to is not a master")

// Writable checks that Redis answers and that the node kairos writes to is
// a master (ROLE), so that /readyz fails while a failover has left kairos
// on a replica. A cluster client routes writes to masters itself and a
// server without ROLE (the embedded one) is taken as a master: both are
// only pinged.
func (s *Store) Writable(ctx context.Context) error {
	if _, ok := s.c.(*redis.ClusterClient); ok {
		return s.Ping(ctx)
	}
	role, err := s.c.Do(ctx, "ROLE").Slice()
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "unknown command") {
			return s.Ping(ctx)
		}
		return err
	}
	if len(role) == 0 || role[0] != "master" {
		return fmt.Errorf("%w: ROLE answers %v", ErrNotMaster, role)
	}
	return nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// dueMS is a due time in unix ms, rounded up: a job never fires before the
// instant asked for, whatever finer time its caller gave.
func dueMS(t time.Time) int64 {
	v := t.UnixMilli()
	if t.After(time.UnixMilli(v)) {
		v++
	}
	return v
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// ShardMutex returns the redsync mutex that a scanner holds while it
// claims shard's jobs, expiring ttl after it was last taken or extended.
// The claim script is what keeps two claims from handing a job out twice;
// the mutex saves the work of two scanners on one shard. Its value is
// owner's, the same at every take: a take or an extension whose reply was
// lost (Redis froze, a connection dropped) leaves the mutex its owner's,
// and the owner's next take gets it at once (lock.lua) instead of waiting
// for it to expire.
func (s *Store) ShardMutex(shard int, ttl time.Duration, owner string) *redsync.Mutex {
	value := owner + ":" + strconv.Itoa(shard)
	return s.locks.NewMutex(s.k.lock(shard), redsync.WithExpiry(ttl), redsync.WithTries(1),
		redsync.WithGenValueFunc(func() (string, error) { return value, nil }))
}
