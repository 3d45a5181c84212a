package rdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kairos-sh/kairos"
)

// TenantPending returns the tenant's pending jobs across its topics: one
// HGET a shard (layout.go, "Tenant quotas"), nothing scanned.
func (s *Store) TenantPending(ctx context.Context, tenant string) (int64, error) {
	pipe := s.c.Pipeline()
	for sh := range s.k.shards {
		pipe.HGet(ctx, s.k.tenantPending(sh), tenant)
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil && !isNil(err) {
		return 0, fmt.Errorf("read pending jobs of %s: %w", tenant, err)
	}
	var n int64
	for _, c := range cmds {
		v, _ := strconv.ParseInt(c.(interface{ Val() string }).Val(), 10, 64)
		n += v
	}
	return n, nil
}

// GetQuota returns the quota an admin set for tenant, and whether there is one.
func (s *Store) GetQuota(ctx context.Context, tenant string) (kairos.QuotaOverride, bool, error) {
	raw, err := s.c.HGet(ctx, s.k.quotas(), tenant).Result()
	if isNil(err) {
		return kairos.QuotaOverride{}, false, nil
	}
	if err != nil {
		return kairos.QuotaOverride{}, false, fmt.Errorf("get quota of %s: %w", tenant, err)
	}
	var o kairos.QuotaOverride
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		return kairos.QuotaOverride{}, false, fmt.Errorf("decode quota of %s: %w", tenant, err)
	}
	return o, true, nil
}

// PutQuota sets tenant's quota. Its request rate starts afresh: what it
// used under the old rate does not count against the new one.
func (s *Store) PutQuota(ctx context.Context, tenant string, o kairos.QuotaOverride) error {
	raw, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encode quota: %w", err)
	}
	if err := s.c.HSet(ctx, s.k.quotas(), tenant, raw).Err(); err != nil {
		return fmt.Errorf("put quota of %s: %w", tenant, err)
	}
	if err := s.c.Del(ctx, s.k.rate(tenant)).Err(); err != nil {
		return fmt.Errorf("reset the request rate of %s: %w", tenant, err)
	}
	return nil
}

// DeleteQuota removes tenant's quota (it takes the defaults again, its
// request rate afresh); it reports whether there was one.
func (s *Store) DeleteQuota(ctx context.Context, tenant string) (bool, error) {
	n, err := s.c.HDel(ctx, s.k.quotas(), tenant).Result()
	if err == nil {
		err = s.c.Del(ctx, s.k.rate(tenant)).Err()
	}
	if err != nil {
		return false, fmt.Errorf("delete quota of %s: %w", tenant, err)
	}
	return n > 0, nil
}

// TakeRequest takes one request from tenant's request rate q (q.Rate > 0,
// defaulted) on Redis's clock. It returns 0 when the request is allowed,
// else how long until one would be; a refused request changes nothing.
func (s *Store) TakeRequest(ctx context.Context, tenant string, q kairos.Quota) (time.Duration, error) {
	q = q.WithDefaults()
	interval := q.RatePeriod.Microseconds() / int64(q.Rate)
	wait, err := s.run(ctx, quotaScript, []string{s.k.rate(tenant)}, s.scriptNow(), max(interval, 1), q.Burst).Int64()
	if err != nil {
		return 0, fmt.Errorf("request rate of %s: %w", tenant, err)
	}
	return time.Duration(wait) * time.Microsecond, nil
}

// initTenantPending counts every tenant's pending jobs from its topics'
// counters, once for a Redis (meta field tenant_pending): jobs stored by a
// kairos that did not count them per tenant yet are counted then. It reads
// the topics and their handles (no job) and runs one script a shard.
// Processes of that older kairos still running beside this one do not
// count what they change; run it again (RecountTenantPending) once they
// are gone.
func (s *Store) initTenantPending(ctx context.Context) error {
	done, err := s.c.HExists(ctx, s.k.meta(), "tenant_pending").Result()
	if err != nil {
		return fmt.Errorf("read meta: %w", err)
	}
	if done {
		return nil
	}
	if err := s.RecountTenantPending(ctx); err != nil {
		return err
	}
	if err := s.c.HSet(ctx, s.k.meta(), "tenant_pending", "1").Err(); err != nil {
		return fmt.Errorf("record tenant counts: %w", err)
	}
	return nil
}

// RecountTenantPending sets every tenant's pending jobs, in each shard,
// to what its topics' counters say (tenantpending.lua).
func (s *Store) RecountTenantPending(ctx context.Context) error {
	topics, err := s.c.HKeys(ctx, s.k.topics()).Result()
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	argv := []any{""}
	for _, f := range topics {
		tenant, topic, _ := strings.Cut(f, "/")
		h, err := s.handle(ctx, tenant, topic, false)
		if errors.Is(err, kairos.ErrNotFound) {
			continue // never had a job
		}
		if err != nil {
			return err
		}
		argv = append(argv, h, tenant)
	}
	if len(argv) == 1 {
		return nil
	}
	for sh := range s.k.shards {
		argv[0] = s.k.tag(sh)
		if err := s.run(ctx, tenantpendingScript, []string{s.k.topicTenants(sh), s.k.tenantPending(sh)}, argv...).Err(); err != nil {
			return fmt.Errorf("count pending jobs per tenant in shard %d: %w", sh, err)
		}
	}
	return nil
}
