package rdb

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
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
