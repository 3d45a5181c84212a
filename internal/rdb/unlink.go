package rdb

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Wholesale removal by pattern, for a migration that drops keys an older
// layout kept (the ready lists of layout 5). It walks the whole keyspace
// with SCAN, so nothing on a request's path calls it.

// unlinkMatching deletes every key matching pattern with SCAN and UNLINK,
// on every master of a cluster.
func unlinkMatching(ctx context.Context, c redis.UniversalClient, pattern string) (int, error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return unlinkOnNode(ctx, c, pattern)
	}
	var total atomic.Int64 // the masters are walked concurrently
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		n, err := unlinkOnNode(ctx, node, pattern)
		total.Add(int64(n))
		return err
	})
	return int(total.Load()), err
}

// unlinkOnNode deletes the keys of one node matching pattern. Keys are
// unlinked one by one in a pipeline: on a cluster node, keys of several
// slots cannot share one UNLINK.
func unlinkOnNode(ctx context.Context, c redis.Cmdable, pattern string) (int, error) {
	var cursor uint64
	n := 0
	for {
		page, next, err := c.Scan(ctx, cursor, pattern, 10000).Result()
		if err != nil {
			return n, fmt.Errorf("scan %s: %w", pattern, err)
		}
		if len(page) > 0 {
			pipe := c.Pipeline()
			for _, k := range page {
				pipe.Unlink(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return n, fmt.Errorf("unlink: %w", err)
			}
			n += len(page)
		}
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

// globEscape quotes the characters SCAN's MATCH treats as special.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
