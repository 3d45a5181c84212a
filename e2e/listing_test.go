package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"
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
	batch := func(prefix string, n int, delay string) []string {
		var jobs []map[string]any
		var ids []string
		for i := range n {
			id := fmt.Sprintf("%s%03d", prefix, i)
			ids = append(ids, id)
			jobs = append(jobs, map[string]any{"id": id, "delay": delay, "payload": map[string]int{"i": i}})
		}
		e.mustDo("POST", "/v1/topics/t/jobs/batch", map[string]any{"jobs": jobs}, nil, http.StatusCreated)
		return ids
	}
	later := batch("p", 200, "1h")
	time.Sleep(5 * time.Millisecond) // the next batch is created later
	now := batch("n", 40, "0s")
	rcv.waitHits(t, 40, 20*time.Second)
	for _, id := range now {
		e.waitState("t", id, "delivered", 10*time.Second)
	}

	list := func() []string {
		var ids []string
		cursor := ""
		for range 50 {
			var page struct {
				Jobs []jobView `json:"jobs"`
				Next string    `json:"next_cursor"`
			}
			e.mustDo("GET", "/v1/topics/t/jobs?limit=37&cursor="+url.QueryEscape(cursor), nil, &page, http.StatusOK)
			for _, j := range page.Jobs {
				ids = append(ids, j.ID)
			}
			if page.Next == "" {
				return ids
			}
			cursor = page.Next
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

	for _, id := range []string{"p005", "p017", "p123"} {
		e.mustDo("DELETE", "/v1/topics/t/jobs/"+id, nil, nil, http.StatusNoContent)
		all = slices.DeleteFunc(all, func(s string) bool { return s == id })
	}
	check(all)
}
