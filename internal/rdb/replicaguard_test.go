package rdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestCreateNotAckedWhileAReplicaIsAway plays the first step of a Sentinel
// failover on a master with two replicas: one replica is told REPLICAOF NO
// ONE (promoted) while the other stays attached and still confirms writes
// to WAIT 1. A create then is stored on the old master but not
// acknowledged (ErrNotReplicated): those writes are lost when Sentinel
// re-points the other replica. Once the replica is back, creates are
// acknowledged again.
func TestCreateNotAckedWhileAReplicaIsAway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master, err := testredis.Start(t.TempDir(), "--repl-diskless-sync-delay", "0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Stop)
	host, port, _ := strings.Cut(master.Addr, ":")
	var replicas []*redis.Client
	for range 2 {
		r, err := testredis.Start(t.TempDir(), "--replicaof", host, port)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Stop)
		c := redis.NewClient(&redis.Options{Addr: r.Addr})
		t.Cleanup(func() { c.Close() })
		replicas = append(replicas, c)
	}
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	t.Cleanup(func() { mc.Close() })
	waitOnline(t, mc, 2)

	s := New(mc, Options{Prefix: "g", WaitReplicas: 1, WaitTimeout: time.Second})
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	create := func(id string) error {
		_, err := s.Enqueue(ctx, kairos.Job{JobKey: key(id), RunAt: time.Now().Add(time.Hour), Payload: []byte(`1`)})
		return err
	}
	if err := create("before"); err != nil {
		t.Fatalf("create with both replicas attached: %v", err)
	}

	if err := replicas[0].Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	waitOnline(t, mc, 1)
	err = create("during")
	if !errors.Is(err, ErrNotReplicated) || !strings.Contains(err.Error(), "left the master") {
		t.Fatalf("create while a replica is away (promoted), the other confirming: %v, want ErrNotReplicated, a replica left", err)
	}

	if err := replicas[0].Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	waitOnline(t, mc, 2)
	if err := create("after"); err != nil {
		t.Fatalf("create once the replica is back: %v", err)
	}
}

// waitOnline waits until the master has n replicas online.
func waitOnline(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	testwait.UntilNil(t, 20*time.Second, func() error {
		info, err := c.Info(context.Background(), "replication").Result()
		if err != nil {
			return err
		}
		if _, _, online := parseReplication(info); len(online) != n {
			return fmt.Errorf("%s", info)
		}
		return nil
	}, fmt.Sprintf("the master with %d replicas online", n))
}

// TestReplicaWatch: a replica seen online and now away refuses the
// acknowledgement for ReplicaLeftGrace, then the master's fewer replicas
// are the norm; a new master (replication id) starts afresh; a replica
// node says nothing (its writes failed already).
func TestReplicaWatch(t *testing.T) {
	info := func(replid string, addrs ...string) string {
		b := "# Replication\r\nrole:master\r\nconnected_slaves:" + string(rune('0'+len(addrs))) + "\r\n"
		for i, a := range addrs {
			h, p, _ := strings.Cut(a, ":")
			b += "slave" + string(rune('0'+i)) + ":ip=" + h + ",port=" + p + ",state=online,offset=10,lag=0\r\n"
		}
		return b + "master_failover_state:no-failover\r\nmaster_replid:" + replid + "\r\nmaster_replid2:0000\r\nmaster_repl_offset:10\r\n"
	}
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	var w replicaWatch
	steps := []struct {
		name string
		info string
		at   time.Duration
		away bool
	}{
		{"both attached", info("a", "10.0.0.2:6379", "10.0.0.3:6379"), 0, false},
		{"one left", info("a", "10.0.0.3:6379"), time.Second, true},
		{"still away within the grace", info("a", "10.0.0.3:6379"), ReplicaLeftGrace, true},
		{"away past the grace", info("a", "10.0.0.3:6379"), ReplicaLeftGrace + time.Second + time.Millisecond, false},
		{"a new master with one replica", info("b", "10.0.0.3:6379"), ReplicaLeftGrace + 2*time.Second, false},
		{"a replica in sync is not online", strings.Replace(info("b", "10.0.0.3:6379", "10.0.0.1:6379"), "state=online,offset=10,lag=0\r\nmaster", "state=wait_bgsave,offset=0,lag=0\r\nmaster", 1), ReplicaLeftGrace + 3*time.Second, false},
		{"a replica", "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.3\r\n", ReplicaLeftGrace + 4*time.Second, false},
	}
	for _, st := range steps {
		err := w.check(st.info, t0.Add(st.at))
		if got := err != nil; got != st.away || (err != nil && !errors.Is(err, ErrNotReplicated)) {
			t.Errorf("%s: %v, want a replica away: %v", st.name, err, st.away)
		}
	}
}
