package testredis

import (
	"context"
	"testing"
	"time"
)

// TestSentinelsFailover: the Sentinels start knowing the master, its
// replica and each other, and a forced failover makes the replica master.
func TestSentinelsFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("fails a master over: not in the quick tier (-short); make test runs it")
	}
	s := NewSentinels(t, 1)
	ctx := context.Background()
	old, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if old != s.Servers[0] {
		t.Fatalf("master %s, want %s", old.Addr, s.Servers[0].Addr)
	}
	if err := s.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	m, err := s.WaitMaster(ctx, old.Addr, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m != s.Servers[1] {
		t.Fatalf("new master %s, want the replica %s", m.Addr, s.Servers[1].Addr)
	}
	t.Logf("the replica was master %v after SENTINEL FAILOVER", time.Since(began).Round(time.Millisecond))
}
