package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/client"
)

func TestBatchListedAndCancelled(t *testing.T) { testBatchListedAndCancelled(t, startEngine) }

// testBatchListedAndCancelled creates jobs in batches (whose jobs share
// listing index groups per shard), delivers some, and pages through the
// listing before and after cancels: every job listed once, newest first.
func testBatchListedAndCancelled(t *testing.T, start starter) {
	t.Parallel()
	e := start(t, engineOpts{allowPrivate: true})
	rcv := newReceiver(t, nil)
	e.putTopic("t", rcv.URL)
	batch := func(prefix string, n int, delay time.Duration) []string {
		var jobs []client.JobRequest
		var ids []string
		for i := range n {
			id := fmt.Sprintf("%s%03d", prefix, i)
			ids = append(ids, id)
			jobs = append(jobs, client.JobRequest{ID: id, Delay: client.Duration(delay), Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		}
		e.createBatch("t", jobs)
		return ids
	}
	later := batch("p", 200, time.Hour)
	time.Sleep(5 * time.Millisecond) // the next batch is created later
	now := batch("n", 40, 0)
	rcv.waitHits(t, 40, 20*time.Second)
	for _, id := range now {
		e.waitState("t", id, "delivered", 10*time.Second)
	}

	list := func() []string {
		var ids []string
		cursor := ""
		for range 50 {
			page, err := e.c.ListJobs(context.Background(), "t", client.ListOptions{Limit: 37, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range page.Jobs {
				ids = append(ids, j.ID)
			}
			if page.NextCursor == "" {
				return ids
			}
			cursor = page.NextCursor
		}
		t.Fatal("listing never ended")
		return nil
	}
	check := func(want []string) {
		t.Helper()
		got := list()
		if len(got) != len(want) {
			t.Fatalf("listed %d jobs, want %d", len(got), len(want))
		}
		// newest first: the later batch before the earlier; each batch's
		// jobs share a creation ms per shard, so within a batch any order
		sorted := slices.Clone(got[:len(now)])
		slices.Sort(sorted)
		if !slices.Equal(sorted, now) {
			t.Fatalf("the first %d listed are not the later batch: %v", len(now), got[:len(now)])
		}
		sorted = slices.Clone(got)
		slices.Sort(sorted)
		if !slices.Equal(sorted, want) {
			t.Fatalf("listed %v, want %v", sorted, want)
		}
	}
	all := append(slices.Clone(later), now...)
	slices.Sort(all)
	check(all)

	// cancelled jobs stay listed, as cancelled, for the retention period
	for _, id := range []string{"p005", "p017", "p123"} {
		if err := e.c.CancelJob(context.Background(), "t", id); err != nil {
			t.Fatal(err)
		}
	}
	check(all)
}
