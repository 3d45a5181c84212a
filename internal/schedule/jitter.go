package schedule

import (
	"hash/fnv"
	"strconv"
	"time"
)

// WithJitter returns p whose instants each fire a delay in [0, jitter)
// later: the delay of an instant is a hash of seed (the schedule id) and
// the instant, so it is the same whenever and wherever the instant is
// computed. Next, NextN and Between then give the times the occurrences
// fire. A jitter shorter than the gaps between instants keeps their order;
// a longer one (refused by the API) may reorder them, and Next still
// returns them in time order.
func (p *Pattern) WithJitter(seed string, jitter time.Duration) *Pattern {
	q := *p
	q.jitter, q.seed = jitter.Truncate(time.Millisecond), seed
	return &q
}

// Jitter is the bound of p's delays (0 for none).
func (p *Pattern) Jitter() time.Duration { return p.jitter }

// Delay is the delay instant t of p fires after t: in [0, Jitter()), in
// whole milliseconds.
func (p *Pattern) Delay(t time.Time) time.Duration {
	n := p.jitter.Milliseconds()
	if n <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(p.seed))
	h.Write([]byte{'@'})
	h.Write(strconv.AppendInt(nil, t.UnixMilli(), 10))
	return time.Duration(h.Sum64()%uint64(n)) * time.Millisecond
}

// nextJittered returns the earliest fire time (instant plus delay) after
// t. Only instants after t - jitter can fire after t, and none after the
// best found so far can fire before it.
func (p *Pattern) nextJittered(t time.Time) (time.Time, bool) {
	t = t.Truncate(time.Millisecond)
	var best time.Time
	found := false
	from := t.Add(-p.jitter)
	for {
		in, ok := p.nextInstant(from)
		if !ok || (found && !in.Before(best)) {
			break
		}
		if f := in.Add(p.Delay(in)); f.After(t) && (!found || f.Before(best)) {
			best, found = f, true
		}
		from = in
	}
	return best, found
}

// Between returns the fire times of p's instants in [from, to), in the
// order of the instants, and false when there are more than most of them
// (then the first most+1).
func (p *Pattern) Between(from, to time.Time, most int) ([]time.Time, bool) {
	var out []time.Time
	t := from.Add(-time.Millisecond)
	for {
		in, ok := p.nextInstant(t)
		if !ok || !in.Before(to) {
			return out, true
		}
		if len(out) == most {
			return append(out, in.Add(p.Delay(in))), false
		}
		out = append(out, in.Add(p.Delay(in)))
		t = in
	}
}

// ShortestGap is the shortest gap between p's first n instants after t
// (without jitter), or 0 when it has fewer than two.
func (p *Pattern) ShortestGap(t time.Time, n int) time.Duration {
	var gap time.Duration
	prev, ok := p.nextInstant(t)
	for i := 1; ok && i < n; i++ {
		next, more := p.nextInstant(prev)
		if !more {
			break
		}
		if d := next.Sub(prev); gap == 0 || d < gap {
			gap = d
		}
		prev = next
	}
	return gap
}
