package rdb

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// IsOutOfMemory reports whether err is, or wraps, Redis refusing a write
// for want of memory (the OOM error: maxmemory reached). Nothing of the
// refused call was written: kairos's scripts run as functions, which Redis
// refuses before they start unless they are flagged to run anyway (those
// that free memory or finish work: claims, cancels, releases).
func IsOutOfMemory(err error) bool { return err != nil && redis.IsOOMError(err) }

// MaxmemoryPolicy returns Redis's maxmemory-policy, read from INFO memory
// (which managed Redis services answer where CONFIG GET is refused). On a
// cluster it returns the first master's policy that is not noeviction, or
// noeviction when all are. It returns "" when INFO does not say.
func (s *Store) MaxmemoryPolicy(ctx context.Context) (string, error) {
	read := func(ctx context.Context, c redis.Cmdable) (string, error) {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			return "", fmt.Errorf("read maxmemory-policy: %w", err)
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "maxmemory_policy:"); ok {
				return v, nil
			}
		}
		return "", nil
	}
	cc, ok := s.c.(*redis.ClusterClient)
	if !ok {
		return read(ctx, s.c)
	}
	var mu sync.Mutex
	policy := ""
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		p, err := read(ctx, c)
		mu.Lock()
		defer mu.Unlock()
		if policy == "" || policy == "noeviction" {
			policy = p
		}
		return err
	})
	return policy, err
}
