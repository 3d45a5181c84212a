package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// waitHits waits until a receiver counting in hits has had at least n
// callbacks, and fails the test with the count it saw if not within.
func waitHits(tb testing.TB, hits *atomic.Int64, n int64, within time.Duration) {
	tb.Helper()
	testwait.UntilNil(tb, within, func() error {
		if got := hits.Load(); got < n {
			return fmt.Errorf("%d callbacks", got)
		}
		return nil
	}, fmt.Sprintf("%d jobs delivered", n))
}

// waitDelivered waits until /v1/stats counts n of ti's tenant's jobs as
// delivered: their outcomes are written, not only their callbacks made.
func waitDelivered(t *testing.T, ti *testInstance, n int64, within time.Duration) {
	t.Helper()
	testwait.UntilNil(t, within, func() error {
		var stats struct {
			Topics []struct {
				Counts map[string]int64 `json:"counts"`
			} `json:"topics"`
		}
		if err := json.Unmarshal([]byte(ti.call(t, "GET", "/v1/stats", "", http.StatusOK)), &stats); err != nil {
			t.Fatal(err)
		}
		var got int64
		for _, tp := range stats.Topics {
			got += tp.Counts["delivered"]
		}
		if got < n {
			return fmt.Errorf("%d delivered", got)
		}
		return nil
	}, fmt.Sprintf("%d jobs recorded as delivered", n))
}

// waitSettled waits until no attempt is under way in any shard of the
// kairos (default prefix) on rc's Redis, none claimed and not finished,
// and none is due within a second: from then on no job that is not filed
// anew can reach a receiver, so a test that counts deliveries after it has
// seen every duplicate there could be, without sleeping for it.
func waitSettled(t *testing.T, rc redis.UniversalClient, within time.Duration) {
	t.Helper()
	s := rdb.New(rc, rdb.Options{})
	if err := s.Init(context.Background()); err != nil { // the recorded shards, and the clock
		t.Fatal(err)
	}
	testwait.UntilNil(t, within, func() error {
		for sh := range s.Shards() {
			p, err := s.Claim(context.Background(), sh, 0, 0, time.Second)
			if err != nil {
				return err
			}
			if p.Active > 0 {
				return fmt.Errorf("shard %d: %d attempts under way", sh, p.Active)
			}
			if !p.Next.IsZero() && p.Next.Before(p.Now.Add(time.Second)) {
				return fmt.Errorf("shard %d: work due at %v", sh, p.Next)
			}
		}
		return nil
	}, "no attempt under way")
}
