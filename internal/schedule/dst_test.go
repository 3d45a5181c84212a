package schedule

import (
	"fmt"
	"testing"
	"time"
)

// TestNextAcrossDaylightSaving pins the instants around the four 2026
// transitions in Europe/Berlin (01:00Z both ways: 02:00 CET to 03:00 CEST on
// 29 March, 03:00 CEST to 02:00 CET on 25 October) and America/New_York
// (02:00 EST to 03:00 EDT at 07:00Z on 8 March, 02:00 EDT to 01:00 EST at
// 06:00Z on 1 November).
func TestNextAcrossDaylightSaving(t *testing.T) {
	tests := []struct {
		name, zone, cron, from string
		want                   []string
	}{
		// Berlin, spring forward: 02:00-02:59 do not exist.
		{"Berlin spring daily", "Europe/Berlin", "30 2 * * *", "2026-03-27T12:00:00Z", []string{
			"2026-03-28T01:30:00Z", // 02:30 CET
			"2026-03-29T01:00:00Z", // 02:30 does not exist: 03:00 CEST
			"2026-03-30T00:30:00Z", // 02:30 CEST
		}},
		{"Berlin spring hourly", "Europe/Berlin", "0 * * * *", "2026-03-28T23:30:00Z", []string{
			"2026-03-29T00:00:00Z", // 01:00 CET
			"2026-03-29T01:00:00Z", // 02:00 (missing) and 03:00 CEST, once
			"2026-03-29T02:00:00Z", // 04:00 CEST
		}},
		{"Berlin spring every 15 minutes", "Europe/Berlin", "*/15 * * * *", "2026-03-29T00:40:00Z", []string{
			"2026-03-29T00:45:00Z", // 01:45 CET
			"2026-03-29T01:00:00Z", // 02:00, 02:15, 02:30, 02:45 (missing) and 03:00 CEST, once
			"2026-03-29T01:15:00Z", // 03:15 CEST
		}},
		{"Berlin spring every minute", "Europe/Berlin", "* * * * *", "2026-03-29T00:58:00Z", []string{
			"2026-03-29T00:59:00Z", // 01:59 CET
			"2026-03-29T01:00:00Z", // 02:00-02:59 (missing) and 03:00 CEST, once
			"2026-03-29T01:01:00Z", // 03:01 CEST
		}},
		{"Berlin spring, only missing times named", "Europe/Berlin", "0,30 2 * * *", "2026-03-28T12:00:00Z", []string{
			"2026-03-29T01:00:00Z", // 02:00 and 02:30 (missing), once at 03:00 CEST
			"2026-03-30T00:00:00Z", // 02:00 CEST
		}},
		{"Berlin spring, with seconds", "Europe/Berlin", "30 30 2 * * *", "2026-03-28T12:00:00Z", []string{
			"2026-03-29T01:00:00Z", // 02:30:30 (missing): 03:00:00 CEST
			"2026-03-30T00:30:30Z",
		}},

		// Berlin, fall back: 02:00-02:59 occur twice, CEST then CET.
		{"Berlin fall daily", "Europe/Berlin", "30 2 * * *", "2026-10-23T12:00:00Z", []string{
			"2026-10-24T00:30:00Z", // 02:30 CEST
			"2026-10-25T00:30:00Z", // 02:30 CEST, not again at 02:30 CET (01:30Z)
			"2026-10-26T01:30:00Z", // 02:30 CET
		}},
		{"Berlin fall hourly", "Europe/Berlin", "0 * * * *", "2026-10-24T23:30:00Z", []string{
			"2026-10-25T00:00:00Z", // 02:00 CEST
			"2026-10-25T02:00:00Z", // 03:00 CET; 02:00 CET (01:00Z) is a repeat
			"2026-10-25T03:00:00Z", // 04:00 CET
		}},
		{"Berlin fall every 15 minutes", "Europe/Berlin", "*/15 * * * *", "2026-10-25T00:40:00Z", []string{
			"2026-10-25T00:45:00Z", // 02:45 CEST
			"2026-10-25T02:00:00Z", // 03:00 CET; 02:00-02:45 CET are repeats
			"2026-10-25T02:15:00Z", // 03:15 CET
		}},
		{"Berlin fall every minute", "Europe/Berlin", "* * * * *", "2026-10-25T00:58:00Z", []string{
			"2026-10-25T00:59:00Z", // 02:59 CEST
			"2026-10-25T02:00:00Z", // 03:00 CET
			"2026-10-25T02:01:00Z",
		}},
		{"Berlin fall, from inside the repeated hour", "Europe/Berlin", "*/15 * * * *", "2026-10-25T01:20:00Z", []string{
			"2026-10-25T02:00:00Z", // 02:20 CET now; 02:30 and 02:45 fired in CEST
		}},

		// New York, spring forward: 02:00-02:59 do not exist.
		{"New York spring daily", "America/New_York", "30 2 * * *", "2026-03-07T00:00:00Z", []string{
			"2026-03-07T07:30:00Z", // 02:30 EST
			"2026-03-08T07:00:00Z", // 02:30 does not exist: 03:00 EDT
			"2026-03-09T06:30:00Z", // 02:30 EDT
		}},
		{"New York spring hourly", "America/New_York", "0 * * * *", "2026-03-08T05:30:00Z", []string{
			"2026-03-08T06:00:00Z", // 01:00 EST
			"2026-03-08T07:00:00Z", // 02:00 (missing) and 03:00 EDT, once
			"2026-03-08T08:00:00Z", // 04:00 EDT
		}},
		{"New York spring every 15 minutes", "America/New_York", "*/15 * * * *", "2026-03-08T06:40:00Z", []string{
			"2026-03-08T06:45:00Z", // 01:45 EST
			"2026-03-08T07:00:00Z", // 02:00-02:45 (missing) and 03:00 EDT, once
			"2026-03-08T07:15:00Z", // 03:15 EDT
		}},
		{"New York spring every minute", "America/New_York", "* * * * *", "2026-03-08T06:58:00Z", []string{
			"2026-03-08T06:59:00Z",
			"2026-03-08T07:00:00Z",
			"2026-03-08T07:01:00Z",
		}},

		// New York, fall back: 01:00-01:59 occur twice, EDT then EST.
		{"New York fall daily in the repeated hour", "America/New_York", "30 1 * * *", "2026-10-31T00:00:00Z", []string{
			"2026-10-31T05:30:00Z", // 01:30 EDT
			"2026-11-01T05:30:00Z", // 01:30 EDT, not again at 01:30 EST (06:30Z)
			"2026-11-02T06:30:00Z", // 01:30 EST
		}},
		{"New York fall daily after the repeated hour", "America/New_York", "30 2 * * *", "2026-10-31T00:00:00Z", []string{
			"2026-10-31T06:30:00Z", // 02:30 EDT
			"2026-11-01T07:30:00Z", // 02:30 EST
		}},
		{"New York fall hourly", "America/New_York", "0 * * * *", "2026-11-01T04:30:00Z", []string{
			"2026-11-01T05:00:00Z", // 01:00 EDT
			"2026-11-01T07:00:00Z", // 02:00 EST; 01:00 EST (06:00Z) is a repeat
			"2026-11-01T08:00:00Z",
		}},
		{"New York fall every 15 minutes", "America/New_York", "*/15 * * * *", "2026-11-01T05:40:00Z", []string{
			"2026-11-01T05:45:00Z", // 01:45 EDT
			"2026-11-01T07:00:00Z", // 02:00 EST; 01:00-01:45 EST are repeats
			"2026-11-01T07:15:00Z",
		}},
		{"New York fall every minute", "America/New_York", "* * * * *", "2026-11-01T05:58:00Z", []string{
			"2026-11-01T05:59:00Z", // 01:59 EDT
			"2026-11-01T07:00:00Z", // 02:00 EST
			"2026-11-01T07:01:00Z",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNext(t, mustParse(t, tt.cron, "", tt.zone), tt.from, tt.want...)
		})
	}
}

// TestEveryIgnoresDaylightSaving: every counts absolute time.
func TestEveryIgnoresDaylightSaving(t *testing.T) {
	p, err := Parse("", "30m", "Europe/Berlin", utc("2026-03-29T00:15:00Z"), time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	checkNext(t, p, "2026-03-29T00:20:00Z",
		"2026-03-29T00:45:00Z", "2026-03-29T01:15:00Z", "2026-03-29T01:45:00Z")
}

// TestNextMatchesBruteForce compares Next with a walk minute by minute through
// absolute time around zone transitions, which fires at an instant when its
// wall time matches and was not shown before, or when clocks just jumped over
// a wall time that matches. Besides Berlin and New York: Lord Howe moves by 30
// minutes, São Paulo's 2018 spring had no midnight, and Apia skipped
// 30 December 2011 altogether.
func TestNextMatchesBruteForce(t *testing.T) {
	transitions := []struct{ zone, at string }{
		{"Europe/Berlin", "2026-03-29T01:00:00Z"},
		{"Europe/Berlin", "2026-10-25T01:00:00Z"},
		{"America/New_York", "2026-03-08T07:00:00Z"},
		{"America/New_York", "2026-11-01T06:00:00Z"},
		{"Australia/Lord_Howe", "2026-04-04T15:00:00Z"},
		{"Australia/Lord_Howe", "2026-10-03T15:30:00Z"},
		{"America/Sao_Paulo", "2018-11-04T03:00:00Z"},
		{"America/Sao_Paulo", "2019-02-17T02:00:00Z"},
		{"Pacific/Apia", "2011-12-30T10:00:00Z"},
		{"Asia/Kolkata", "2026-03-29T01:00:00Z"}, // no transition: a control
	}
	patterns := []string{
		"* * * * *", "*/15 * * * *", "0 * * * *", "30 * * * *", "30 2 * * *", "0 0 * * *",
		"45 1,2 * * *", "0,30 0-3 * * *", "20 0 * * SUN", "59 23 * * *", "0 9 * * MON-FRI",
	}
	for _, tr := range transitions {
		loc, err := time.LoadLocation(tr.zone)
		if err != nil {
			t.Fatal(err)
		}
		from, to := utc(tr.at).Add(-30*time.Hour), utc(tr.at).Add(30*time.Hour)
		_, offFrom := from.In(loc).Zone()
		_, offTo := to.In(loc).Zone()
		if (offFrom != offTo) != (tr.zone != "Asia/Kolkata") {
			t.Fatalf("%s: offset %d at %v and %d at %v", tr.zone, offFrom, from, offTo, to)
		}
		for _, cron := range patterns {
			t.Run(tr.zone+" "+tr.at+" "+cron, func(t *testing.T) {
				p := mustParse(t, cron, "", tr.zone)
				want := bruteForce(p.cron, loc, from, to)
				var got []time.Time
				for at, ok := p.Next(from.Add(-time.Millisecond)); ok && at.Before(to); at, ok = p.Next(at) {
					got = append(got, at)
				}
				if !equalTimes(got, want) {
					t.Errorf("Next:\n got %v\nwant %v", fmtTimes(got, loc), fmtTimes(want, loc))
				}
			})
		}
	}
}

// bruteForce lists the instants in [from, to) at which a pattern with second 0
// fires in loc, minute by minute. Zone transitions must fall on whole minutes.
func bruteForce(c *cronSpec, loc *time.Location, from, to time.Time) []time.Time {
	matches := func(w time.Time) bool {
		y, mo, d := w.Date()
		return c.minute&(1<<w.Minute()) != 0 && c.hour&(1<<w.Hour()) != 0 &&
			c.month&(1<<int(mo)) != 0 && c.dayMatches(y, int(mo), d)
	}
	var out []time.Time
	shown := map[time.Time]bool{}
	_, prevOff := from.Add(-time.Minute).In(loc).Zone()
	for x := from; x.Before(to); x = x.Add(time.Minute) {
		_, off := x.In(loc).Zone()
		w := wallClock(x, loc)
		fire := matches(w) && !shown[w]
		// Clocks jumped forward at x over [w - jump, w).
		for g := w.Add(-time.Duration(off-prevOff) * time.Second); g.Before(w); g = g.Add(time.Minute) {
			fire = fire || matches(g)
		}
		if fire {
			out = append(out, x)
		}
		shown[w] = true
		prevOff = off
	}
	return out
}

func fmtTimes(ts []time.Time, loc *time.Location) string {
	s := ""
	for _, t := range ts {
		s += fmt.Sprintf("\n  %s (%s)", t.Format("2006-01-02T15:04Z"), t.In(loc).Format("15:04 MST"))
	}
	return s
}
