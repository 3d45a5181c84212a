package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/testredis"
)

// commandCounts reads INFO commandstats: calls by command, leaving out the
// INFO and CONFIG calls that measuring makes.
func commandCounts(t *testing.T, c *redis.Client) map[string]int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		if name == "info" || strings.HasPrefix(name, "config") {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		out[name] = n
	}
	return out
}

// An API process (--roles api) that gets no request sends Redis nothing:
// no subscription, no polls, no lease. Scaled to zero, it costs nothing.
func TestAPIRoleIdleSendsRedisNothing(t *testing.T) {
	skipShort(t)
	srv := testredis.New(t)
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": srv.URL(), "KAIROS_ROLES": "api"})
	ti.call(t, "PUT", "/v1/topics/t", `{"callback_url": "`+ti.rcvURL+`"}`, http.StatusCreated)
	ti.call(t, "POST", "/v1/topics/t/jobs", `{"delay": "1h", "payload": 1}`, http.StatusCreated)
	probe := redis.NewClient(srv.Options())
	defer probe.Close()
	ctx := context.Background()
	if err := probe.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the point: an idle window, its commands counted
	if got := commandCounts(t, probe); len(got) != 0 {
		t.Fatalf("an API process with no request sent Redis %v in 3s, want nothing", got)
	}
	clients, err := probe.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(clients, "\n") {
		if strings.Contains(line, "name=kairos") && !strings.Contains(line, " sub=0 ") {
			t.Errorf("an API process holds a subscription: %s", line)
		}
	}
}
