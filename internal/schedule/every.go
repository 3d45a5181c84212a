package schedule

import (
	"strings"
	"time"

	"github.com/kairos-sh/kairos/internal/duration"
)

// The bounds of an every interval.
const (
	minEvery = time.Second
	maxEvery = 366 * 24 * time.Hour
)

// parseEvery parses an every interval: a duration (Go syntax plus days,
// duration.Parse) from 1s to 366 days, in whole milliseconds.
func parseEvery(s string) (time.Duration, error) {
	d, err := duration.Parse(s)
	if err != nil {
		hint := ""
		if strings.ContainsAny(s, "DwWyY") {
			hint = "; there are no week or year units: write weeks in days, e.g. \"14d\""
		}
		return 0, fieldErr("every", "%q is not a duration; write one such as \"90s\", \"15m\", \"1h30m\" or \"7d\" (units ms, s, m, h, d)%s", s, hint)
	}
	switch {
	case d < minEvery:
		return 0, fieldErr("every", "%q is shorter than the minimum of 1s", s)
	case d > maxEvery:
		return 0, fieldErr("every", "%q is longer than the maximum of 366 days (366d)", s)
	case d%time.Millisecond != 0:
		return 0, fieldErr("every", "%q is not a whole number of milliseconds", s)
	}
	return d, nil
}

// everyAfter returns the first instant anchor + k*every (k >= 0) after lower.
// Arithmetic is in Unix milliseconds, which cannot overflow between the
// years 1 and 9999.
func (p *Pattern) everyAfter(lower time.Time) time.Time {
	a, l, e := p.anchor.UnixMilli(), lower.UnixMilli(), p.every.Milliseconds()
	k := int64(0)
	if l >= a {
		k = (l-a)/e + 1
	}
	return time.UnixMilli(a + k*e).UTC()
}
