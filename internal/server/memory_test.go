package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestEvictingRedisRefusedAtStart: kairos refuses a Redis whose
// maxmemory-policy is not noeviction, saying why and how to override, and
// runs on it with KAIROS_ALLOW_EVICTION=1.
func TestEvictingRedisRefusedAtStart(t *testing.T) {
	t.Parallel()
	srv := testredis.New(t, "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
	_, err := startWith(map[string]string{"KAIROS_REDIS_URL": srv.URL()})
	if err == nil {
		t.Fatal("kairos started on a Redis with maxmemory-policy allkeys-lru")
	}
	t.Logf("refused: %v", err)
	for _, want := range []string{"allkeys-lru", "noeviction", "KAIROS_ALLOW_EVICTION"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	in, err := startWith(map[string]string{"KAIROS_REDIS_URL": srv.URL(), "KAIROS_ALLOW_EVICTION": "1"})
	if err != nil {
		t.Fatalf("with KAIROS_ALLOW_EVICTION=1: %v", err)
	}
	in.Stop()
}

// TestRedisOutOfMemory fills a Redis with a small maxmemory: a create then
// gets a 507 problem naming the cause and writes nothing (the keyspace is
// unchanged), jobs created before are still delivered and cancels work,
// and creates succeed again once memory is freed.
func TestRedisOutOfMemory(t *testing.T) {
	skipShort(t)
	t.Parallel()
	srv := testredis.New(t, "--maxmemory-policy", "noeviction")
	rc := redis.NewClient(srv.Options())
	t.Cleanup(func() { rc.Close() })
	ctx := context.Background()
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": srv.URL(), "KAIROS_PREFIX": "oom"})
	ti.call(t, "PUT", "/v1/topics/t", `{"callback_url": "`+ti.rcvURL+`"}`, http.StatusCreated)
	// jobs due after Redis is full: they must still be delivered
	for i := range 20 {
		ti.call(t, "POST", "/v1/topics/t/jobs", `{"id": "due`+strconv.Itoa(i)+`", "delay": "3s", "payload": 1}`, http.StatusCreated)
	}
	ti.call(t, "POST", "/v1/topics/t/jobs", `{"id": "cancel-me", "delay": "1h", "payload": 1}`, http.StatusCreated)

	fill(t, rc)
	before := snapshot(t, rc)
	status, body, err := ti.do("POST", "/v1/topics/t/jobs", `{"id": "refused", "delay": "1s", "payload": {"x": 1}}`)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("create while Redis is full: %d %s", status, body)
	if status != http.StatusInsufficientStorage || !strings.Contains(body, "out of memory") {
		t.Fatalf("create while Redis is full: %d %s; want a 507 problem naming the cause", status, body)
	}
	status, body, _ = ti.do("POST", "/v1/topics/t/jobs/batch", `{"jobs": [{"id": "b1", "delay": "1s"}, {"id": "b2", "delay": "1s"}]}`)
	t.Logf("batch while Redis is full: %d %s", status, body)
	if !strings.Contains(body, "507") {
		t.Errorf("batch while Redis is full: %d %s; want items refused with 507", status, body)
	}
	if diff := cmp.Diff(before, snapshot(t, rc)); diff != "" {
		t.Errorf("refused creates changed the keyspace (-before +after):\n%s", diff)
	}
	ti.call(t, "DELETE", "/v1/topics/t/jobs/cancel-me", "", http.StatusNoContent)
	testwait.Until(t, 30*time.Second, func() bool { return ti.hits.Load() >= 20 }, "20 jobs delivered while Redis is full")
	for i := range 20 {
		id := "due" + strconv.Itoa(i)
		testwait.Until(t, testwait.Patience, func() bool {
			return strings.Contains(ti.call(t, "GET", "/v1/topics/t/jobs/"+id, "", http.StatusOK), `"delivered"`)
		}, id+" recorded as delivered")
	}
	used, _ := rc.Info(ctx, "memory").Result()
	status, _, _ = ti.do("POST", "/v1/topics/t/jobs", `{"id": "still-refused", "delay": "1s", "payload": 1}`)
	t.Logf("delivered %d and cancelled 1 with Redis full (used_memory %s; a create now: %d)", ti.hits.Load(), usedMemory(used), status)
	if status != http.StatusInsufficientStorage {
		t.Errorf("a create after the deliveries got %d: Redis was no longer full, so this test did not deliver under OOM", status)
	}

	unfill(t, rc)
	ti.call(t, "POST", "/v1/topics/t/jobs", `{"id": "after", "delay": "0s", "payload": 1}`, http.StatusCreated)
	testwait.Until(t, 20*time.Second, func() bool { return ti.hits.Load() >= 21 }, "the job created after memory was freed delivered")
}

// fill writes 2 MB of keys outside kairos's prefix, then lowers Redis's
// maxmemory to 256 KB under its used memory: Redis is full (as after
// filling it) for as long as those keys stay, whatever kairos frees
// meanwhile. unfill deletes them, which frees more than that margin.
func fill(t *testing.T, rc *redis.Client) {
	t.Helper()
	ctx := context.Background()
	chunk := strings.Repeat("x", 64<<10)
	for i := range 32 {
		if err := rc.Set(ctx, "filler:"+strconv.Itoa(i), chunk, 0).Err(); err != nil {
			t.Fatalf("fill Redis: %v", err)
		}
	}
	mem, err := rc.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	used, _ := strconv.ParseInt(usedMemory(mem), 10, 64)
	if err := rc.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used-256<<10, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Redis full: maxmemory %d, used_memory %d", used-256<<10, used)
}

func unfill(t *testing.T, rc *redis.Client) {
	t.Helper()
	ctx := context.Background()
	keys, err := rc.Keys(ctx, "filler:*").Result()
	if err == nil && len(keys) > 0 {
		err = rc.Del(ctx, keys...).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func usedMemory(info string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "used_memory:"); ok {
			return v
		}
	}
	return ""
}

// snapshot is kairos's keyspace: every key under the prefix "oom" with its
// value, but for the scanners' liveness and lock keys, which change on
// their own.
func snapshot(t *testing.T, rc *redis.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range testredis.Keys(t, rc, "oom") {
		if strings.Contains(k, "{scanners}") || strings.Contains(k, ":lock:") {
			continue
		}
		v, err := rc.Dump(context.Background(), k).Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}
