package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Revoked is the list of revoked API tokens kept in Redis, and its
// version: every revocation adds one to it.
type Revoked struct {
	Before  map[string]time.Time // tenant -> its tokens issued at or before this second are revoked
	IDs     map[string]bool      // jti -> revoked
	Version int64
}

// revokedVersion is the field of the revoked tokens' hash that counts its changes.
const revokedVersion = "v"

// RevokedVersion returns the version of the revoked tokens' list: one
// HGET, so that a process can tell cheaply whether to read it again.
func (s *Store) RevokedVersion(ctx context.Context) (int64, error) {
	v, err := s.c.HGet(ctx, s.k.revoked(), revokedVersion).Int64()
	if isNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the version of the revoked tokens: %w", err)
	}
	return v, nil
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
		case f == revokedVersion:
			r.Version, _ = strconv.ParseInt(v, 10, 64)
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

// RevokeBefore revokes tenant's tokens issued at or before t (its second).
// A later call replaces the time.
func (s *Store) RevokeBefore(ctx context.Context, tenant string, t time.Time) error {
	return s.revoke(ctx, "t:"+tenant, strconv.FormatInt(t.Unix(), 10))
}

// RevokeID revokes the token whose jti is id.
func (s *Store) RevokeID(ctx context.Context, id string) error {
	return s.revoke(ctx, "j:"+id, "1")
}

// revoke writes a revocation and adds one to the list's version, in one
// transaction on the one key.
func (s *Store) revoke(ctx context.Context, field, value string) error {
	pipe := s.c.TxPipeline()
	pipe.HSet(ctx, s.k.revoked(), field, value)
	pipe.HIncrBy(ctx, s.k.revoked(), revokedVersion, 1)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("revoke tokens: %w", err)
	}
	return nil
}
