package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// Daylight saving through the engine, on a clock the test controls: a
// daily 02:30 in Europe/Berlin and America/New_York across the real 2026
// transitions. The local time that does not exist (spring forward) fires
// once, at the first instant after the gap (03:00 new time); the one that
// occurs twice (fall back) fires once, at its first occurrence (summer
// time). Each fired occurrence is claimed at its instant by the claim
// script, which files the next: the test only moves the clock to the
// pending instant and claims, as a scanner on time would.
func TestScheduleDaylightSaving(t *testing.T) {
	for _, tc := range []struct {
		zone  string
		from  time.Time // clock start, UTC
		want  []string  // the fire instants, UTC
		local []string  // the same, in the zone
	}{
		{"Europe/Berlin", time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC), // spring forward: Sun 29 March 02:00 CET -> 03:00 CEST
			[]string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"},
			[]string{"02:30 CET", "03:00 CEST", "02:30 CEST"}},
		{"Europe/Berlin", time.Date(2026, 10, 23, 12, 0, 0, 0, time.UTC), // fall back: Sun 25 October 03:00 CEST -> 02:00 CET
			[]string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"},
			[]string{"02:30 CEST", "02:30 CEST", "02:30 CET"}},
		{"America/New_York", time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC), // spring forward: Sun 8 March 02:00 EST -> 03:00 EDT
			[]string{"2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"},
			[]string{"02:30 EST", "03:00 EDT", "02:30 EDT"}},
		{"America/New_York", time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC), // fall back: Sun 1 November 02:00 EDT -> 01:00 EST; 02:30 is once, in EST
			[]string{"2026-10-31T06:30:00Z", "2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z"},
			[]string{"02:30 EDT", "02:30 EST", "02:30 EST"}},
	} {
		t.Run(tc.zone+" "+tc.from.Format("January"), func(t *testing.T) {
			got := fireDaily(t, tc.zone, "30 2 * * *", tc.from, len(tc.want))
			checkInstants(t, tc.zone, got, tc.want, tc.local)
		})
	}
	// 01:30 in New York occurs twice on 1 November: once, the first (EDT).
	t.Run("America/New_York twice-occurring 01:30", func(t *testing.T) {
		got := fireDaily(t, "America/New_York", "30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC), 2)
		checkInstants(t, "America/New_York", got, []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}, []string{"01:30 EDT", "01:30 EST"})
	})
}

// fireDaily puts the schedule cron in zone with the clock at from, then n
// times moves the clock to the pending occurrence and fires what is due;
// it returns the instants of the occurrences fired, from their job ids.
func fireDaily(t *testing.T, zone, cron string, from time.Time, n int) []time.Time {
	t.Helper()
	s, clk := newStore(t, Options{Shards: 4}) // the patterns of kairos serve: internal/schedule
	clk.Set(from)
	ctx := context.Background()
	if _, err := s.PutSchedule(ctx, kairos.Schedule{Tenant: "acme", Topic: "orders", ID: "nightly", Cron: cron,
		Timezone: zone, CreatedAt: from, Job: kairos.Job{Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	var fired []time.Time
	for len(fired) < n {
		sc, err := s.GetSchedule(ctx, "acme", "orders", "nightly")
		if err != nil {
			t.Fatal(err)
		}
		if sc.Pending.IsZero() || sc.Pending.Sub(clk.Now()) > 48*time.Hour {
			t.Fatalf("after %d occurrences the pending one is %v (clock %v)", len(fired), sc.Pending, clk.Now())
		}
		clk.Set(sc.Pending)
		ids := fireDue(t, s)
		if len(ids) != 1 {
			t.Fatalf("at %v fired %v, want the one occurrence", clk.Now(), ids)
		}
		sid, at, ok := kairos.ParseOccurrence(ids[0])
		if !ok || sid != "nightly" || ids[0] != kairos.OccurrenceID(sid, at) {
			t.Fatalf("occurrence id %q", ids[0])
		}
		fired = append(fired, at)
		// Nothing else fires before the next pending instant, an hour
		// either side of the transition included.
		for range 3 {
			clk.Add(time.Hour)
			if sc, err := s.GetSchedule(ctx, "acme", "orders", "nightly"); err == nil && !sc.Pending.After(clk.Now()) {
				break
			}
			if ids := fireDue(t, s); len(ids) != 0 {
				t.Fatalf("at %v fired %v between occurrences", clk.Now(), ids)
			}
		}
	}
	return fired
}

func checkInstants(t *testing.T, zone string, got []time.Time, want, local []string) {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	for i := range want {
		if g := got[i].UTC().Format(time.RFC3339); g != want[i] {
			t.Errorf("occurrence %d at %s, want %s", i, g, want[i])
		}
		if l := got[i].In(loc).Format("15:04 MST"); l != local[i] {
			t.Errorf("occurrence %d at %s local, want %s", i, l, local[i])
		}
	}
}
