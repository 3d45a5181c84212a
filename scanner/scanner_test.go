package scanner

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

func TestMain(m *testing.M) { os.Exit(testredis.Main(m)) }

func newStore(t *testing.T) (*rdb.Store, string) {
	t.Helper()
	prefix := testredis.Prefix(t)
	s := rdb.New(testredis.Client(t), rdb.Options{Prefix: prefix, Shards: 1, NewSecret: callback.NewSecret})
	if err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, prefix
}

// runScanner runs sc until the test ends.
func runScanner(t *testing.T, sc *Scanner) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { sc.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// waitPushed waits until shard 0 has n jobs pushed and not started (its
// pop leases, read as a claim of nothing does).
func waitPushed(t *testing.T, s *rdb.Store, n int, within time.Duration) {
	t.Helper()
	testwait.UntilNil(t, within, func() error {
		if p := pushed(t, s); p < n {
			return fmt.Errorf("%d of %d jobs claimed", p, n)
		}
		return nil
	}, "the jobs claimed")
}

// TestLaterWakeDoesNotPostponeDueWork: a wake-up for later work, heard
// before a shard's first look (or while its mutex is held), does not put
// off work due now.
func TestLaterWakeDoesNotPostponeDueWork(t *testing.T) {
	s, _ := newStore(t)
	if _, err := s.Enqueue(context.Background(), kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: "now"}, RunAt: s.Now()}); err != nil {
		t.Fatal(err)
	}
	sc := New(s, Config{LockTTL: 2 * time.Second, Wakes: make(chan rdb.Wake)})
	sc.Wake(rdb.Wake{Shard: 0, At: s.Now().Add(10 * time.Minute)})
	runScanner(t, sc)
	waitPushed(t, s, 1, 10*time.Second)
}

// TestMutexDeletedWhileHeld: a shard whose mutex vanishes while held (an
// operator deleted keys, a failover lost the write) is taken again, and
// work that came due meanwhile is claimed at its time, not at the next
// look the shard had planned.
func TestMutexDeletedWhileHeld(t *testing.T) {
	s, prefix := newStore(t)
	ctx := context.Background()
	wakes := make(chan rdb.Wake, 8)
	sc := New(s, Config{LockTTL: 2 * time.Second, Wakes: wakes})
	// work every half second keeps the mutex held
	for i := range 6 {
		id := "w" + string(rune('a'+i))
		if _, err := s.Enqueue(ctx, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: id}, RunAt: s.Now().Add(time.Duration(i) * 500 * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	runScanner(t, sc)
	waitPushed(t, s, 1, 10*time.Second)
	deleted := 0
	for _, k := range testredis.Keys(t, s.Client(), prefix) {
		if strings.HasSuffix(k, ":lock") {
			if err := s.Client().Del(ctx, k).Err(); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	if deleted != 1 {
		t.Fatalf("deleted %d shard mutexes, want the one held", deleted)
	}
	waitPushed(t, s, 6, 15*time.Second)
}
