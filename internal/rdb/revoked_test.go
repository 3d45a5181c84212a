package rdb

import (
	"context"
	"testing"
	"time"
)

// TestRevokedList: revocations by time and by jti are read back, each adds
// one to the list's version, and a later time replaces an earlier one.
func TestRevokedList(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	if v, err := s.RevokedVersion(ctx); err != nil || v != 0 {
		t.Fatalf("version of no list: %d, %v", v, err)
	}
	at := time.Date(2026, 11, 21, 10, 0, 0, 900e6, time.UTC)
	if err := s.RevokeBefore(ctx, "acme", at); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeID(ctx, "n3oZIMcafZyF8Segdv8SnQ"); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeBefore(ctx, "acme", at.Add(time.Hour)); err != nil {
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
		!r.IDs["n3oZIMcafZyF8Segdv8SnQ"] || len(r.IDs) != 1 || r.Version != 3 {
		t.Fatalf("list %+v", r)
	}
}
