package rdb

import (
	"context"
	"testing"
	"time"
)

// TestRevokedList: revocations by time and by jti are read back, each that
// changes the list adds one to its version, a later time replaces an
// earlier one, and a jti is scoped to its tenant.
func TestRevokedList(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	if v, err := s.RevokedVersion(ctx); err != nil || v != 0 {
		t.Fatalf("version of no list: %d, %v", v, err)
	}
	at := time.Date(2026, 11, 21, 10, 0, 0, 900e6, time.UTC)
	if got, err := s.RevokeBefore(ctx, "acme", at); err != nil || !got.Equal(at.Truncate(time.Second)) {
		t.Fatalf("cutoff in force %s, %v; want %s", got, err, at.Truncate(time.Second))
	}
	if err := s.RevokeID(ctx, "acme", "n3oZIMcafZyF8Segdv8SnQ"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeBefore(ctx, "acme", at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	v, err := s.RevokedVersion(ctx)
	if err != nil || v != 3 {
		t.Fatalf("version %d (%v), want 3", v, err)
	}
	r, err := s.LoadRevoked(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := at.Add(time.Hour).Truncate(time.Second); !r.Before["acme"].Equal(want) || len(r.Before) != 1 ||
		!r.IDs["acme/n3oZIMcafZyF8Segdv8SnQ"] || len(r.IDs) != 1 || r.Version != 3 {
		t.Fatalf("list %+v", r)
	}
}

// TestRevocationCutoffOnlyMovesForward: a second revocation with an
// earlier issued_before leaves the later cutoff in force (and says so), and
// changes neither the list nor its version; revoking a jti twice changes
// it once. An unscoped jti of an older kairos still revokes.
func TestRevocationCutoffOnlyMovesForward(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	late := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	if _, err := s.RevokeBefore(ctx, "acme", late); err != nil {
		t.Fatal(err)
	}
	got, err := s.RevokeBefore(ctx, "acme", late.Add(-time.Hour))
	if err != nil || !got.Equal(late) {
		t.Fatalf("an earlier cutoff answered %s, %v; want the one in force, %s", got, err, late)
	}
	for range 2 {
		if err := s.RevokeID(ctx, "acme", "j1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.c.HSet(ctx, s.k.revoked(), "j:legacy", "1").Err(); err != nil {
		t.Fatal(err)
	}
	r, err := s.LoadRevoked(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Before["acme"].Equal(late) || r.Version != 2 || !r.IDs["acme/j1"] || !r.IDs["/legacy"] {
		t.Fatalf("list %+v, want acme's cutoff at %s, version 2, acme/j1 and /legacy", r, late)
	}
}
