package rdb

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Wholesale removal for the load tool (cmd/kairos-bench), which runs a
// kairos of its own on a fresh prefix and must leave nothing behind. Each
// walks the whole keyspace with SCAN, so nothing in kairos itself calls
// them. They take a client of the caller's, so that their commands are
// not counted as the store's.

// PrefixInUse reports whether a kairos store lives under prefix on c (its
// meta key exists).
func PrefixInUse(ctx context.Context, c redis.UniversalClient, prefix string) (bool, error) {
	n, err := c.Exists(ctx, keys{prefix: prefix}.meta()).Result()
	return n > 0, err
}

// DropJobs deletes at once every job under prefix, pending or not, with
// everything kept per shard (pools, timing wheels, counters, listings,
// dead letters, schedules, ready lists). Topics, their handles,
// signing keys and the layout stay. It returns the keys deleted.
func DropJobs(ctx context.Context, c redis.UniversalClient, prefix string) (int, error) {
	p := globEscape(prefix)
	// A shard's tag is {N}: a digit first, unlike {handles} and {scanners}.
	return unlinkMatching(ctx, c, p+":{[0-9]*")
}

// DropPrefix deletes every key under prefix. It returns the keys deleted.
func DropPrefix(ctx context.Context, c redis.UniversalClient, prefix string) (int, error) {
	return unlinkMatching(ctx, c, globEscape(prefix)+":*")
}

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
