package rdb

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/testredis"
)

// BenchmarkLayout measures what Redis needs to hold a pending job in the
// layouts the contract allows, and in denser ones it does not, with nothing
// of kairos around them: the floor under the "Redis memory per pending job"
// figure of `kairos bench`. Each op stores one job shaped like the load
// tool's (tenant "bench", topic "bench-" and 12 hex digits, id
// "enqueue-<6 hex>-<n>", benchPayload, 16 shards); the B/job metric is
// INFO used_memory growth over the jobs stored. Run it with a job count:
//
//	go test -run '^$' -bench Layout -benchtime 1000000x ./internal/rdb
//
// Layouts:
//   - bucket: the Delay Bucket entry alone, member = job key (DESIGN.md)
//   - bucket-handle: the same with a short topic handle for tenant/topic
//   - hash: one hash per job with only state, run_at, created and payload
//   - pool-split, pool-split-handle: the job packed into a field of one of
//     4096 hashes a shard, small enough to stay a listpack under Redis's
//     default hash-max-listpack-value (64): two fields a job
//   - pool-128, pool-128-handle: one field a job, with hash-max-listpack-value
//     raised to 128 (a server setting kairos cannot count on)
func BenchmarkLayout(b *testing.B) {
	for _, name := range layouts {
		b.Run(name, func(b *testing.B) { benchLayout(b, name) })
	}
}

var layouts = []string{"bucket", "bucket-handle", "hash", "pool-split", "pool-split-handle", "pool-128", "pool-128-handle"}

// layoutScript stores jobs from..to of one layout; see BenchmarkLayout.
var layoutScript = redis.NewScript(`
local layout, prefix, from, to, payload = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local handle = string.find(layout, 'handle', 1, true)
for i = from, to do
  local member = (handle and 't1/' or 'bench/bench-abcdef012345/') .. 'enqueue-ab12cd-' .. i
  local tag = prefix .. ':{' .. (i % 16) .. '}:'
  local due = 1795302000000 + (i * 37) % 3600000
  local created = 1795255501067 + i
  local pool = tag .. 'pool:' .. ((i * 2654435761) % 4096)
  if string.sub(layout, 1, 6) == 'bucket' then
    redis.call('ZADD', tag .. 'bucket', due, member)
  elseif layout == 'hash' then
    redis.call('HSET', tag .. 'job:' .. member, 'st', 'scheduled', 'ra', due, 'ca', created, 'p', payload)
  elseif string.sub(layout, 1, 10) == 'pool-split' then
    redis.call('HSET', pool, member, 's' .. due .. ',' .. created, member .. '>', payload)
  else
    redis.call('HSET', pool, member, 's' .. due .. ',' .. created .. ',' .. payload)
  end
end
return 0
`)

func benchLayout(b *testing.B, layout string) {
	srv := testredis.New(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	b.ResetTimer()
	perJob := storeLayout(b, c, layout, b.N)
	b.StopTimer()
	b.ReportMetric(perJob, "B/job")
}

// TestLayoutScript runs each layout of BenchmarkLayout on a few jobs, so
// that the benchmark's script and checks are exercised by the normal suite.
func TestLayoutScript(t *testing.T) {
	srv := testredis.New(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	for _, layout := range layouts {
		if err := c.FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		if perJob := storeLayout(t, c, layout, 200); perJob <= 0 {
			t.Errorf("%s: %.1f B/job, want memory to grow", layout, perJob)
		}
	}
}

// storeLayout stores n jobs in one layout and returns the used_memory
// growth per job. The pool layouts must leave their hashes listpacks.
func storeLayout(tb testing.TB, c *redis.Client, layout string, n int) float64 {
	ctx := context.Background()
	lpv := "64" // Redis's default
	if strings.HasPrefix(layout, "pool-128") {
		lpv = "128"
	}
	if err := c.ConfigSet(ctx, "hash-max-listpack-value", lpv).Err(); err != nil {
		tb.Fatal(err)
	}
	before := usedMemory(tb, c)
	for from := 0; from < n; from += 10000 {
		to := min(from+10000, n) - 1
		if err := layoutScript.Run(ctx, c, nil, layout, "kairos", from, to, benchPayload).Err(); err != nil {
			tb.Fatal(err)
		}
	}
	perJob := float64(usedMemory(tb, c)-before) / float64(n)
	if strings.HasPrefix(layout, "pool") {
		// the pools must have stayed listpacks, or the layout is not the one named
		keys, err := c.Keys(ctx, "kairos:*:pool:*").Result()
		if err != nil || len(keys) == 0 {
			tb.Fatalf("%s: no pool hashes (%v)", layout, err)
		}
		enc, err := c.ObjectEncoding(ctx, keys[0]).Result()
		if err != nil {
			tb.Fatal(err)
		}
		if enc != "listpack" {
			tb.Fatalf("%s: pool hash %s is %s, not a listpack", layout, keys[0], enc)
		}
	}
	return perJob
}

func usedMemory(tb testing.TB, c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatal("INFO memory has no used_memory")
	return 0
}
