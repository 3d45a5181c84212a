package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// claimSkipped claims everything due now, leaving it active, and returns
// what the claims' replies said they skipped, summed by topic.
func claimSkipped(t *testing.T, s *Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for sh := range s.Shards() {
		c, err := s.ClaimDue(context.Background(), sh, 500, 0, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range c.Skipped {
			out[tc.Tenant+"/"+tc.Topic] += tc.N
		}
		if c.Refills > 0 {
			if err := s.RefillSchedules(context.Background(), sh, 100); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// A claim's reply names, by topic, the instants its overlap rule skipped
// in that call (the scanner's kairos_occurrences_skipped_total), and only
// those: the same count the schedule's header and the topic's counters
// keep, with nothing when an instant fires or waits.
func TestClaimReportsSkippedInstants(t *testing.T) {
	for _, tc := range []struct {
		overlap kairos.Overlap
		skipped []int // per claim after the first, while the first is active
	}{
		{kairos.OverlapSkip, []int{1, 1, 1}},
		{kairos.OverlapBufferOne, []int{0, 1, 1}}, // the first later instant waits
	} {
		t.Run(string(tc.overlap), func(t *testing.T) {
			s, now, add := newScheduleStore(t)
			ctx := context.Background()
			sc := everySecond("tick", now().Add(500*time.Millisecond), "")
			sc.Overlap = tc.overlap
			if _, err := s.PutSchedule(ctx, sc); err != nil {
				t.Fatal(err)
			}
			add(time.Second)
			if got := claimSkipped(t, s); len(got) != 0 {
				t.Fatalf("the first instant fired, yet the claim says it skipped %v", got)
			}
			total := 0
			for i, n := range tc.skipped {
				add(time.Second)
				want := map[string]int{}
				if n > 0 {
					want["acme/orders"] = n
				}
				if d := cmp.Diff(want, claimSkipped(t, s)); d != "" {
					t.Errorf("claim %d while the first is active: skipped (-want +got):\n%s", i+2, d)
				}
				total += n
			}
			got, err := s.GetSchedule(ctx, "acme", "orders", "tick")
			if err != nil || got.Skipped != int64(total) {
				t.Errorf("the schedule counts %d skipped (%v), the claims said %d", got.Skipped, err, total)
			}
		})
	}
}
