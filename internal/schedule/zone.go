package schedule

import (
	"time"
	_ "time/tzdata" // zones do not depend on the host or image having tzdata
)

// loadZone loads an IANA time zone; "" is UTC.
func loadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if !zoneName(name) {
		return nil, fieldErr("timezone", "%q is not an IANA zone name; names look like \"Europe/Berlin\", \"America/New_York\" or \"UTC\"", truncate(name, 64))
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fieldErr("timezone", "unknown IANA zone %q; names look like \"Europe/Berlin\", \"America/New_York\" or \"UTC\"", name)
	}
	return loc, nil
}

// zoneName reports whether name is shaped like an IANA zone name. It keeps
// out "Local" (the host's zone) and anything LoadLocation would read as a
// path.
func zoneName(name string) bool {
	if len(name) > 64 || name == "Local" || name[0] == '/' || name[len(name)-1] == '/' {
		return false
	}
	for _, r := range name {
		ok := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' ||
			r == '/' || r == '_' || r == '-' || r == '+'
		if !ok {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// A wall time is a local date and clock reading with no zone, held as a
// time.Time in UTC so that the calendar arithmetic of package time applies.

// wallClock returns the wall time t shows in loc, to the second.
func wallClock(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc)
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, 0, time.UTC)
}

// instant returns the instant at which wall time w fires in loc:
//   - w occurs once: that instant;
//   - w occurs twice (clocks fell back): the first occurrence;
//   - w does not occur (clocks sprang forward over it): the end of the gap,
//     the first instant after it.
//
// instant is monotonic: a later wall time never maps to an earlier instant.
func instant(w time.Time, loc *time.Location) time.Time {
	y, mo, d := w.Date()
	h, mi, s := w.Clock()
	x := time.Date(y, mo, d, h, mi, s, 0, loc)
	if xw := wallClock(x, loc); !xw.Equal(w) {
		// w is in a gap, and time.Date picked an instant on one side of it.
		start, end := x.ZoneBounds()
		if xw.After(w) && !start.IsZero() {
			return start // x is after the gap, which ends where x's zone starts
		}
		if xw.Before(w) && !end.IsZero() {
			return end // x is before the gap, which ends where x's zone ends
		}
		return x
	}
	if earlier, ok := earlierOccurrence(x, w, loc); ok {
		return earlier
	}
	return x
}

// earlierOccurrence finds an occurrence of wall time w before x in the zone
// period before x's, which exists when clocks fell back over w.
func earlierOccurrence(x, w time.Time, loc *time.Location) (time.Time, bool) {
	start, _ := x.ZoneBounds()
	if start.IsZero() {
		return time.Time{}, false
	}
	_, off := x.Zone()
	_, prevOff := start.Add(-time.Nanosecond).Zone()
	if prevOff <= off {
		return time.Time{}, false
	}
	y := x.Add(-time.Duration(prevOff-off) * time.Second)
	if y.Before(start) && wallClock(y, loc).Equal(w) {
		return y, true
	}
	return time.Time{}, false
}

// firstNewWall returns the earliest wall time whose instant can lie after t:
// the second after t's wall time, or, when t is in the second pass of wall
// times that clocks fell back over, the wall time that ends that pass (the
// repeated wall times fired in the first pass).
func firstNewWall(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc)
	w := wallClock(t, loc).Add(time.Second)
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return w
	}
	_, off := t.Zone()
	_, prevOff := start.Add(-time.Nanosecond).Zone()
	if prevOff <= off {
		return w
	}
	// Just before start, clocks showed start's wall time plus the difference.
	passEnd := wallClock(start, loc).Add(time.Duration(prevOff-off) * time.Second)
	if w.Before(passEnd) {
		return passEnd
	}
	return w
}
