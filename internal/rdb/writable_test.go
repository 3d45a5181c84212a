package rdb

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/testredis"
)

// TestWritableOnlyOnAMaster: a replica answers PING but is not writable.
func TestWritableOnlyOnAMaster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master, err := testredis.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Stop)
	host, port, _ := strings.Cut(master.Addr, ":")
	replica, err := testredis.Start(t.TempDir(), "--replicaof", host, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Stop)
	for _, tc := range []struct {
		addr string
		want error
	}{{master.Addr, nil}, {replica.Addr, ErrNotMaster}} {
		c := redis.NewClient(&redis.Options{Addr: tc.addr})
		t.Cleanup(func() { c.Close() })
		s := New(c, Options{Prefix: "w"})
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Writable(ctx); !errors.Is(err, tc.want) {
			t.Errorf("%s: Writable = %v, want %v", tc.addr, err, tc.want)
		}
	}
}
