package e2e

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/kairos-sh/kairos/internal/testredis"
)

var (
	clusterOnce sync.Once
	cluster     *testredis.Cluster
	clusterDir  string
	clusterErr  error
)

// sharedCluster starts one Redis Cluster (3 masters, 3 replicas) for the
// package, on first use.
func sharedCluster(t *testing.T) *testredis.Cluster {
	t.Helper()
	clusterOnce.Do(func() {
		clusterDir, clusterErr = os.MkdirTemp("", "kairos-cluster-")
		if clusterErr == nil {
			cluster, clusterErr = testredis.StartCluster(clusterDir, 3)
		}
	})
	if clusterErr != nil {
		t.Fatal(clusterErr)
	}
	return cluster
}

func stopCluster() {
	if cluster != nil {
		cluster.Stop()
	}
	if clusterDir != "" {
		os.RemoveAll(clusterDir)
	}
}

func startClusterEngine(t *testing.T, o engineOpts) *engine {
	t.Helper()
	c, b := sharedCluster(t).Client(), sharedCluster(t).Client()
	t.Cleanup(func() { c.Close(); b.Close() })
	o.client, o.blocking = c, b
	return startEngine(t, o)
}

// TestCluster runs the end-to-end engine tests on a real Redis Cluster:
// every script must touch one hash slot, or Redis answers CROSSSLOT.
func TestCluster(t *testing.T) {
	sharedCluster(t)
	t.Run("FiresOnceAtItsTimeSigned", func(t *testing.T) { testFiresOnceAtItsTimeSigned(t, startClusterEngine) })
	t.Run("CancelBeforeDueNeverFires", func(t *testing.T) { testCancelBeforeDueNeverFires(t, startClusterEngine) })
	t.Run("RescheduleEarlierAndLater", func(t *testing.T) { testRescheduleEarlierAndLater(t, startClusterEngine) })
	t.Run("UpsertByIDDeliversOnce", func(t *testing.T) { testUpsertByIDDeliversOnce(t, startClusterEngine) })
	t.Run("FailTwiceThenSucceed", func(t *testing.T) { testFailTwiceThenSucceed(t, startClusterEngine) })
	t.Run("DeadAfterMaxAttemptsThenReplay", func(t *testing.T) { testDeadAfterMaxAttemptsThenReplay(t, startClusterEngine) })
	t.Run("BatchListedAndCancelled", func(t *testing.T) { testBatchListedAndCancelled(t, startClusterEngine) })
	t.Run("ScheduleEverySecond", func(t *testing.T) { testScheduleEverySecond(t, startClusterEngine) })
	t.Run("ShardsSpreadOverMasters", func(t *testing.T) {
		e := startClusterEngine(t, engineOpts{allowPrivate: true})
		masters := map[string]bool{}
		for sh := range e.store.Shards() {
			m, err := cluster.Master(context.Background(), e.prefix+":{"+strconv.Itoa(sh)+"}:bucket")
			if err != nil {
				t.Fatal(err)
			}
			masters[m.Addr] = true
		}
		if len(masters) != 3 {
			t.Fatalf("16 shards live on %d masters, want all 3", len(masters))
		}
	})
}
