package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Revoked is the list of revoked API tokens kept in Redis, and its
// version: every revocation that changed it adds one to it.
type Revoked struct {
	Before map[string]time.Time // tenant -> its tokens issued at or before this second are revoked
	// IDs are single tokens: "tenant/jti" revokes the token of that
	// tenant with that jti; "/jti" (written before revocations were
	// scoped to their tenant) that jti whatever its tenant.
	IDs     map[string]bool
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
		case strings.HasPrefix(f, revokedTenantMark):
			if sec, err := strconv.ParseInt(v, 10, 64); err == nil {
				r.Before[f[2:]] = time.Unix(sec, 0).UTC()
			}
		case strings.HasPrefix(f, "i:"):
			r.IDs[f[2:]] = true
		case strings.HasPrefix(f, revokedJTIMark): // unscoped, as first written
			r.IDs["/"+f[2:]] = true
		}
	}
	return r, nil
}

// RevokeBefore revokes tenant's tokens issued at or before t (its second)
// and returns the cutoff in force: a cutoff only moves forward, so a t
// before the tenant's cutoff changes nothing, and the later one is
// returned.
func (s *Store) RevokeBefore(ctx context.Context, tenant string, t time.Time) (time.Time, error) {
	v, err := s.revoke(ctx, revokedTenantMark+tenant, strconv.FormatInt(t.Unix(), 10))
	if err != nil {
		return time.Time{}, err
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("revoke tokens: cutoff %q: %w", v, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// RevokeID revokes tenant's token whose jti is id; a token of another
// tenant with the same jti is not revoked.
func (s *Store) RevokeID(ctx context.Context, tenant, id string) error {
	_, err := s.revoke(ctx, "i:"+tenant+"/"+id, "1")
	return err
}

// revoke writes a revocation unless one as strict is in force, adding one
// to the list's version when it changed it (revoke.lua), and returns the
// value in force.
func (s *Store) revoke(ctx context.Context, field, value string) (string, error) {
	v, err := s.run(ctx, revokeScript, []string{s.k.revoked()}, field, value).Text()
	if err != nil {
		return "", fmt.Errorf("revoke tokens: %w", err)
	}
	return v, nil
}
