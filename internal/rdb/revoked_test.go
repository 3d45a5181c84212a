package rdb

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/testredis"
)

// TestWatchRevoked: the watcher applies a revocation announced by pub/sub,
// follows its subscription through a restart of Redis, and picks up a
// change whose message was lost at its next resync.
func TestWatchRevoked(t *testing.T) {
	t.Parallel()
	srv := testredis.New(t)
	c := redis.NewClient(srv.Options())
	t.Cleanup(func() { c.Close() })
	s := New(c, Options{Prefix: "w"})
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var last Revoked
	var wg sync.WaitGroup
	wg.Go(func() {
		s.WatchRevoked(ctx, 300*time.Millisecond, func(r Revoked) { mu.Lock(); last = r; mu.Unlock() }, func(error) {})
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitFor := func(what string, ok func(Revoked) bool, each func()) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if each != nil {
				each()
			}
			mu.Lock()
			r := last
			mu.Unlock()
			if ok(r) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 15s the watcher has not seen %s: %+v", what, r)
			}
		}
	}
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	waitFor("the tenant's revocation", func(r Revoked) bool { return r.Before["acme"].Equal(at) }, func() { s.RevokeBefore(ctx, "acme", at) })

	srv.Kill()
	if err := srv.Restart(); err != nil { // an empty Redis: nothing persisted
		t.Fatal(err)
	}
	waitFor("a revocation after Redis came back", func(r Revoked) bool { return r.IDs["after-restart"] }, func() { s.RevokeID(ctx, "after-restart") })

	// a change whose message was lost: the resync finds it
	if err := c.HSet(ctx, s.k.revoked(), "j:unannounced", "1").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor("an unannounced revocation", func(r Revoked) bool { return r.IDs["unannounced"] }, nil)
}
