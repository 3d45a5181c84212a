package schedule

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse feeds Parse any fields and bounds. Nothing may panic or take
// long; a pattern that parses must give instants after t, strictly
// increasing, in UTC milliseconds (cron: whole seconds), within [start, end],
// each a wall time the cron pattern names or the end of a gap in which it
// names one; and its String must parse again to the same pattern.
func FuzzParse(f *testing.F) {
	const transition = 1792890000 // 2026-10-25T01:00:00Z, Berlin falls back
	for _, seed := range []struct {
		cron, every, tz        string
		anchor, start, end, at int64
	}{
		{cron: "30 2 * * *", tz: "Europe/Berlin", anchor: transition - 86400, at: -3600},
		{cron: "* * * * *", tz: "Europe/Berlin", anchor: transition - 3600, at: 1800 * 1000},
		{cron: "*/15 * * * *", tz: "America/New_York", anchor: 1772949600, at: 3600 * 1000},
		{cron: "0 * * * *", tz: "Pacific/Apia", anchor: 1325160000, at: 7200 * 1000},
		{cron: "*/7 * * * * *", tz: "Australia/Lord_Howe", anchor: 1775314800, end: 86400},
		{cron: "0 0 29 2 *", anchor: 4096000000, start: 1000},
		{cron: "0 0 30 2 *", anchor: transition},
		{cron: "0 0 13 * FRI", anchor: transition, start: 86400, end: 86400 * 60},
		{cron: "0 0 */2 * MON", tz: "Asia/Kathmandu", anchor: transition},
		{cron: "@weekly", tz: "America/Sao_Paulo", anchor: 1541300000},
		{cron: "0 9 * * MON-FRI", end: 1, anchor: transition},
		{cron: "59 59 23 31 12 *", anchor: 253402300000},
		{cron: "1-2-3 * * * *", anchor: transition},
		{cron: "TZ=UTC * * * * *", anchor: transition},
		{cron: "0 0 L * *", anchor: transition},
		{cron: "*/60 * * * *", anchor: transition},
		{cron: "0 0 0 1 1 * 2030", anchor: transition},
		{cron: ",", anchor: transition},
		{cron: "? ? ? ? ?", anchor: transition},
		{every: "90s", tz: "Europe/Berlin", anchor: transition, start: 100, end: 100000},
		{every: "1.5s", anchor: transition, at: 1234567},
		{every: "8784h", anchor: 253402300000},
		{every: "2d", anchor: transition},
		{every: "1ns", anchor: transition},
		{cron: "* * * * *", every: "1m", anchor: transition},
		{cron: "0 9 * * *", tz: "Europe/Pariss", anchor: transition},
		{every: "1h", tz: "Local", anchor: transition},
	} {
		f.Add(seed.cron, seed.every, seed.tz, uint8(0), seed.anchor, seed.start, seed.end, seed.at)
	}
	f.Add("*/20 * * * *", "", "", uint8(1), int64(transition), int64(0), int64(0), int64(0))
	f.Add("0 30 1 * * *", "", "", uint8(2), int64(1793512800), int64(0), int64(0), int64(0))
	// With tz empty, zone picks a zone with daylight saving or odd offsets.
	zones := []string{"", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
		"America/Sao_Paulo", "Pacific/Apia", "Asia/Kathmandu", "America/St_Johns"}
	f.Fuzz(func(t *testing.T, cron, every, tz string, zone uint8, anchorSec, startOff, endOff, atOff int64) {
		if tz == "" {
			tz = zones[int(zone)%len(zones)]
		}
		// The anchor lies in about 1958-2158, the bounds and t within 50 years of it.
		const span = 50 * 365 * 86400 // seconds
		anchor := time.Unix(5e9-anchorSec%(4*span), anchorSec%1000*1e6)
		var start, end time.Time
		if startOff != 0 {
			start = anchor.Add(time.Duration(startOff%span) * time.Second)
		}
		if endOff != 0 {
			end = anchor.Add(time.Duration(endOff%span) * time.Second)
		}
		at := anchor.Add(time.Duration(atOff%(span*1000)) * time.Millisecond)

		began := time.Now()
		p, err := Parse(cron, every, tz, anchor, start, end)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Reason == "" {
				t.Fatalf("Parse: %v (%T), want a *FieldError with a reason", err, err)
			}
			switch fe.Field {
			case "cron", "every", "timezone", "start_at", "end_at":
			default:
				t.Fatalf("Parse: error names field %q", fe.Field)
			}
			return
		}
		got := p.NextN(at, 50)
		if took := time.Since(began); took > time.Second {
			t.Fatalf("Parse and NextN took %v", took)
		}
		prev := at.Truncate(time.Millisecond)
		for _, x := range got {
			switch {
			case !x.After(prev):
				t.Fatalf("%q: instant %v is not after %v", p, x, prev)
			case x.Location() != time.UTC || x.Nanosecond()%1e6 != 0:
				t.Fatalf("%q: instant %v is not a UTC millisecond", p, x)
			case !start.IsZero() && x.Before(start):
				t.Fatalf("%q: instant %v is before start %v", p, x, start)
			case !end.IsZero() && x.After(end):
				t.Fatalf("%q: instant %v is after end %v", p, x, end)
			case p.cron != nil && x.Nanosecond() != 0:
				t.Fatalf("%q: cron instant %v is not a whole second", p, x)
			case p.cron != nil && !named(p.cron, x, p.loc):
				t.Fatalf("%q: instant %v (%v) is not named by the pattern", p, x, x.In(p.loc))
			case p.cron == nil && x.Sub(p.anchor)%p.every != 0:
				t.Fatalf("%q: instant %v is off the grid of anchor %v", p, x, p.anchor)
			}
			prev = x
		}
		if p.cron != nil {
			cron = p.String()
		} else {
			every = p.String()
		}
		q, err := Parse(cron, every, tz, anchor, start, end)
		if err != nil {
			t.Fatalf("String %q does not parse again: %v", p, err)
		}
		if again := q.NextN(at, 50); !equalTimes(again, got) {
			t.Fatalf("String %q parsed again gives other instants", p)
		}
	})
}

// named reports whether instant x fires for the cron pattern: its wall time
// matches, or x ends a gap in the wall clock in which a wall time matches.
func named(c *cronSpec, x time.Time, loc *time.Location) bool {
	matches := func(w time.Time) bool {
		y, mo, d := w.Date()
		return c.second&(1<<w.Second()) != 0 && c.minute&(1<<w.Minute()) != 0 &&
			c.hour&(1<<w.Hour()) != 0 && c.month&(1<<int(mo)) != 0 && c.dayMatches(y, int(mo), d)
	}
	w := wallClock(x, loc)
	if matches(w) {
		return true
	}
	start, _ := x.In(loc).ZoneBounds()
	if !start.Equal(x) {
		return false
	}
	gapStart := wallClock(x.Add(-time.Nanosecond), loc).Add(time.Second)
	for g := gapStart; g.Before(w); g = g.Add(time.Second) {
		if matches(g) {
			return true
		}
	}
	return false
}
