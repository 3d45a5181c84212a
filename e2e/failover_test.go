package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestClusterMasterFailover kills a Redis Cluster master with SIGKILL
// during a steady load of creates. Its replica is promoted; kairos
// reconnects by itself; every job the API acknowledged (201) before,
// during or after the kill is delivered. Creates wait for one replica
// (KAIROS_WAIT_REPLICAS=1), which is what makes an acknowledgement
// survive the failover; while the promoted master has no replica, creates
// to its slots answer 503, which the client retries a few times.
func TestClusterMasterFailover(t *testing.T) {
	t.Parallel()
	c, err := testredis.StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	rc, blocking := c.Client(), c.Client()
	t.Cleanup(func() { rc.Close(); blocking.Close() })
	e := startEngine(t, engineOpts{allowPrivate: true, client: rc, blocking: blocking, waitReplicas: 1})
	rcv := newReceiver(t, nil)
	e.putTopic("t", rcv.URL)

	victim, err := c.Master(context.Background(), e.prefix+":{0}:bucket")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked, refused := map[string]bool{}, 0
	stop := time.Now().Add(9 * time.Second)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				id := "w" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
				// With an id, the client retries a create that a 503
				// refused; the server acknowledges once it holds.
				_, err := e.c.CreateJob(context.Background(), "t", client.JobRequest{ID: id, Delay: client.Duration(2 * time.Second)})
				mu.Lock()
				if err == nil {
					acked[id] = true
				} else {
					refused++
				}
				mu.Unlock()
				time.Sleep(20 * time.Millisecond) // the load's pace
			}
		})
	}
	time.Sleep(2 * time.Second) // the point: 2 s of load before the kill
	victim.Kill()
	killedAt := time.Now()
	testwait.UntilNil(t, 30*time.Second, func() error {
		m, err := c.Master(context.Background(), e.prefix+":{0}:bucket")
		if err == nil && m.Addr == victim.Addr {
			err = fmt.Errorf("still %s", victim.Addr)
		}
		return err
	}, "a replica promoted to the killed master's slots")
	if err := victim.Restart(); err != nil { // it rejoins as a replica of its promoted one
		t.Fatal(err)
	}
	wg.Wait()
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	t.Logf("killed master %s at %s; %d creates acknowledged, %d refused (503) while its slots failed over", victim.Addr, killedAt.Format("15:04:05.000"), n, refused)
	if n == 0 {
		t.Fatal("no create was acknowledged")
	}
	dups := 0
	testwait.UntilNil(t, 60*time.Second, func() error {
		byJob := rcv.byJob()
		lost := 0
		dups = 0
		for id := range acked {
			switch k := len(byJob[id]); {
			case k == 0:
				lost++
			case k > 1:
				dups += k - 1
			}
		}
		if lost > 0 {
			return fmt.Errorf("%d of %d never delivered", lost, n)
		}
		return nil
	}, "every acknowledged job delivered after the failover")
	t.Logf("acknowledged %d, delivered %d, duplicates %d, lost 0", n, n, dups)
}
