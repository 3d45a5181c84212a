package bench

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/bench/internal/testenv"
)

// TestCommandStatsCountScriptCommands pins the Redis behaviour the cost
// scenario relies on: INFO commandstats counts each redis.call a script
// makes under its own name, besides the EVAL itself (Redis 7).
func TestCommandStatsCountScriptCommands(t *testing.T) {
	srv := testenv.NewRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	ctx := context.Background()
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	script := "for i = 1, 3 do redis.call('SET', KEYS[1], i) end redis.call('HSET', KEYS[2], 'f', 1) return 1"
	if err := c.Eval(ctx, script, []string{"k", "h"}).Err(); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	got := parseCommandStats(info)
	delete(got, "config|resetstat")
	delete(got, "hello") // go-redis's handshake
	delete(got, "client|setinfo")
	if d := cmp.Diff(map[string]int64{"eval": 1, "set": 3, "hset": 1}, got); d != "" {
		t.Errorf("commandstats (-want +got):\n%s", d)
	}
}
