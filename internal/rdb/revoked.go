package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Revoked is the list of revoked API tokens kept in Redis.
type Revoked struct {
	Before map[string]time.Time // tenant -> its tokens issued at or before this second are revoked
	IDs    map[string]bool      // jti -> revoked
}

// LoadRevoked reads the revoked tokens: one HGETALL.
func (s *Store) LoadRevoked(ctx context.Context) (Revoked, error) {
	all, err := s.c.HGetAll(ctx, s.k.revoked()).Result()
	if err != nil {
		return Revoked{}, fmt.Errorf("read revoked tokens: %w", err)
	}
	r := Revoked{Before: map[string]time.Time{}, IDs: map[string]bool{}}
	for f, v := range all {
		switch {
		case strings.HasPrefix(f, "t:"):
			if sec, err := strconv.ParseInt(v, 10, 64); err == nil {
				r.Before[f[2:]] = time.Unix(sec, 0).UTC()
			}
		case strings.HasPrefix(f, "j:"):
			r.IDs[f[2:]] = true
		}
	}
	return r, nil
}

// RevokeBefore revokes tenant's tokens issued at or before t (its second),
// and tells every process. A later call replaces the time.
func (s *Store) RevokeBefore(ctx context.Context, tenant string, t time.Time) error {
	return s.revoke(ctx, "t:"+tenant, strconv.FormatInt(t.Unix(), 10))
}

// RevokeID revokes the token whose jti is id, and tells every process.
func (s *Store) RevokeID(ctx context.Context, id string) error {
	return s.revoke(ctx, "j:"+id, "1")
}

func (s *Store) revoke(ctx context.Context, field, value string) error {
	if err := s.c.HSet(ctx, s.k.revoked(), field, value).Err(); err != nil {
		return fmt.Errorf("revoke tokens: %w", err)
	}
	// a lost message costs only time: every process reads the list again
	// when its subscription comes back, and every RevokedResync
	s.c.Publish(ctx, s.k.revokedChanged(), field)
	return nil
}

// RevokedResync is how often WatchRevoked reads the list again with no
// message: a safety net for a message lost while Redis failed over.
const RevokedResync = time.Minute

// WatchRevoked calls apply with the revoked tokens at once, then whenever
// they change (a pub/sub message), whenever its subscription is made again
// after a lost connection, and every resync; until ctx ends. Idle, it
// costs one HGETALL a resync. A failed read is logged by the caller's
// onError and tried again at the next occasion.
func (s *Store) WatchRevoked(ctx context.Context, resync time.Duration, apply func(Revoked), onError func(error)) {
	ps := s.c.Subscribe(ctx, s.k.revokedChanged())
	events, done := make(chan struct{}, 1), make(chan struct{})
	defer func() {
		ps.Close() // ends the Receive below
		<-done
	}()
	go func() {
		defer close(done)
		for {
			msg, err := ps.Receive(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				time.Sleep(100 * time.Millisecond) // go-redis dials again on the next Receive
				continue
			}
			switch msg.(type) {
			case *redis.Subscription, *redis.Message: // (re)subscribed, or a change
				select {
				case events <- struct{}{}:
				default:
				}
			}
		}
	}()
	load := func() {
		r, err := s.LoadRevoked(ctx)
		if err != nil {
			if ctx.Err() == nil {
				onError(err)
			}
			return
		}
		apply(r)
	}
	tick := time.NewTicker(resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-events:
			load()
		case <-tick.C:
			load()
		}
	}
}
