package rdb

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
)

// TestShardMutexIsRetakenByItsOwner: a scanner whose give-back was lost
// (Redis froze as it unlocked, or as it extended the mutex, and ran the
// extension after it thawed) takes its shard again at once, where waiting
// for the mutex to expire left the shard's due jobs unclaimed for up to
// its expiry; another scanner still finds it taken.
func TestShardMutexIsRetakenByItsOwner(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	if err := s.ShardMutex(1, time.Minute, "scanner-a").TryLockContext(ctx); err != nil {
		t.Fatalf("first take: %v", err)
	}
	// the give-back never reached Redis: the same owner takes it again
	m := s.ShardMutex(1, time.Minute, "scanner-a")
	if err := m.TryLockContext(ctx); err != nil {
		t.Fatalf("its owner's take after a lost give-back: %v, want taken at once", err)
	}
	var taken *redsync.ErrTaken
	if err := s.ShardMutex(1, time.Minute, "scanner-b").TryLockContext(ctx); !errors.As(err, &taken) && !errors.Is(err, redsync.ErrFailed) {
		t.Fatalf("another scanner's take: %v, want it taken", err)
	}
	if ok, err := m.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("give back: %v %v", ok, err)
	}
	if err := s.ShardMutex(1, time.Minute, "scanner-b").TryLockContext(ctx); err != nil {
		t.Fatalf("another scanner's take once given back: %v", err)
	}
}

// TestShardMutexExtendsAfterTake: the owner's value, the same at every
// take, is the one its extensions look for.
func TestShardMutexExtendsAfterTake(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	m := s.ShardMutex(1, time.Minute, "scanner-a")
	if err := m.TryLockContext(ctx); err != nil {
		t.Fatalf("take: %v", err)
	}
	if ok, err := m.ExtendContext(ctx); !ok || err != nil {
		t.Fatalf("extend: %v %v", ok, err)
	}
}
