package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// An idle scanner sleeps until its shards' earliest wheel slot (here two
// hours ahead), not on a short tick; a job created meanwhile by another
// process, due 200 ms later, must wake it through the wake channel and
// fire long before the scanner's own next look (rdb.WakeHorizon, 30 min).
func TestJobCreatedAfterLongIdleFiresOnTime(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	rcv := newReceiver(t, nil)
	putTopic(t, store, "t", rcv.URL, 5*time.Second)
	ctx := context.Background()
	far := make([]kairos.Job, 64) // something far ahead in every shard
	for i := range far {
		far[i] = kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: "far" + strconv.Itoa(i)}, RunAt: store.Now().Add(2 * time.Hour)}
	}
	for _, r := range store.EnqueueBatch(ctx, far) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	a := startKairos(t, "A", prefix, "KAIROS_LOCK_TTL=10s")
	a.WaitLog(t, "scanner started", 10*time.Second)
	time.Sleep(60 * time.Second) // the point: a long idle, past any short tick
	due := store.Now().Add(200 * time.Millisecond)
	if _, err := store.Enqueue(ctx, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: "soon"}, RunAt: due}); err != nil {
		t.Fatal(err)
	}
	hs := rcv.waitHits(t, 1, 20*time.Second)
	if id := hs[0].Header.Get("Kairos-Job-Id"); id != "soon" {
		t.Fatalf("fired %q, want the job due soon", id)
	}
	t.Logf("after 60s idle, a job created 200ms ahead fired %v after its due time (receiver's clock)", hs[0].At.Sub(store.Local(due)))
}
