package schedule

import (
	"math/bits"
	"time"
)

// next returns the first wall time at or after from that the pattern names,
// searching no further than the end of lastYear. Wall times are held as
// time.Time in UTC (see wallClock). The search steps field by field, so it
// takes at most a few steps per day of the search.
func (c *cronSpec) next(from time.Time, lastYear int) (time.Time, bool) {
	y, mo, d := from.Date()
	month := int(mo)
	h, mi, s := from.Clock()
	for y <= lastYear {
		if v := nextIn(c.month, month); v != month {
			if v > 12 {
				y, month, d, h, mi, s = y+1, 1, 1, 0, 0, 0
				continue
			}
			month, d, h, mi, s = v, 1, 0, 0, 0
		}
		if d > daysIn(y, month) {
			month, d, h, mi, s = month+1, 1, 0, 0, 0
			continue
		}
		if !c.dayMatches(y, month, d) {
			d, h, mi, s = d+1, 0, 0, 0
			continue
		}
		if v := nextIn(c.hour, h); v != h {
			if v > 23 {
				d, h, mi, s = d+1, 0, 0, 0
				continue
			}
			h, mi, s = v, 0, 0
		}
		if v := nextIn(c.minute, mi); v != mi {
			if v > 59 {
				h, mi, s = h+1, 0, 0
				continue
			}
			mi, s = v, 0
		}
		if v := nextIn(c.second, s); v != s {
			if v > 59 {
				mi, s = mi+1, 0
				continue
			}
			s = v
		}
		return time.Date(y, time.Month(month), d, h, mi, s, 0, time.UTC), true
	}
	return time.Time{}, false
}

// dayMatches reports whether the pattern's day fields allow a date.
func (c *cronSpec) dayMatches(y, month, d int) bool {
	wd := time.Date(y, time.Month(month), d, 0, 0, 0, 0, time.UTC).Weekday()
	domOK := c.dom&(1<<d) != 0
	dowOK := c.dow&(1<<wd) != 0
	if c.dayOr {
		return domOK || dowOK
	}
	return domOK && dowOK
}

// nextIn returns the smallest value v >= from in set, or 64 when there is none.
func nextIn(set uint64, from int) int {
	if from >= 64 {
		return 64
	}
	return bits.TrailingZeros64(set >> from << from)
}

func daysIn(y, month int) int {
	return time.Date(y, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
