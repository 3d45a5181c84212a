package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kairos-sh/kairos"
)

// Pattern is a parsed, validated recurrence: a cron pattern in a time zone or
// a fixed interval from an anchor, between optional start and end instants.
// A Pattern is immutable and safe for concurrent use.
type Pattern struct {
	cron   *cronSpec     // nil for an every pattern
	every  time.Duration // the interval of an every pattern
	anchor time.Time     // every's instants are anchor + k*every, k >= 0
	loc    *time.Location
	start  time.Time // first instant allowed; zero: unbounded
	end    time.Time // last instant allowed; zero: unbounded
	period time.Duration
	jitter time.Duration // each instant fires this much later at most (jitter.go)
	seed   string        // what the delays derive from with each instant: the schedule id
}

// FieldError is a request field whose value Parse rejects, with a reason a
// user can act on.
type FieldError struct {
	Field  string // the request field: "cron", "every", "timezone", "start_at" or "end_at"
	Reason string // what was wrong and what is allowed
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

var (
	// minInstant and maxInstant bound every instant a Pattern returns: the
	// years RFC 3339 can write.
	minInstant = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxInstant = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)
)

// Parse validates and parses a recurrence. Exactly one of cron and every must
// be set; timezone "" means UTC. anchor is the instant every counts from (its
// instants are anchor + k*every, k >= 0): start_at if set, else the
// schedule's creation time. For cron, Parse checks from anchor that the
// pattern fires before end. A zero start or end is unbounded; start and end
// are inclusive, and anchor is truncated to the millisecond.
//
// Errors about the arguments are *FieldError naming the request field. A zero
// anchor, or one outside the years 1 to 9999, is the caller's mistake and
// gives a plain error.
func Parse(cron, every, timezone string, anchor, start, end time.Time) (*Pattern, error) {
	if anchor.IsZero() || anchor.Before(minInstant) || anchor.After(maxInstant) {
		return nil, errors.New("schedule: Parse needs an anchor in the years 1 to 9999")
	}
	cron, every = strings.TrimSpace(cron), strings.TrimSpace(every)
	switch {
	case cron == "" && every == "":
		return nil, fieldErr("cron", "set cron (e.g. \"0 9 * * MON-FRI\") or every (e.g. \"15m\")")
	case cron != "" && every != "":
		return nil, fieldErr("every", "set either cron or every, not both")
	}
	p := &Pattern{anchor: anchor.Truncate(time.Millisecond).UTC()}
	var err error
	if cron != "" {
		p.cron, err = parseCron(cron)
	} else {
		p.every, err = parseEvery(every)
	}
	if err != nil {
		return nil, err
	}
	if p.loc, err = loadZone(timezone); err != nil {
		return nil, err
	}
	if err := p.setBounds(start, end); err != nil {
		return nil, err
	}
	if p.cron != nil {
		from := wallClock(p.anchor, p.loc)
		if _, ok := p.cron.next(from, from.Year()+horizonYears); !ok {
			return nil, fieldErr("cron", "%s", p.cron.neverFires())
		}
	}
	if err := p.checkFires(); err != nil {
		return nil, err
	}
	p.period = p.measurePeriod()
	return p, nil
}

// setBounds keeps start rounded up and end rounded down to the millisecond,
// so that every millisecond instant between them lies between the originals.
func (p *Pattern) setBounds(start, end time.Time) error {
	inRange := func(t time.Time) bool { return !t.Before(minInstant) && !t.After(maxInstant) }
	if !start.IsZero() {
		if !inRange(start) {
			return fieldErr("start_at", "must lie in the years 1 to 9999")
		}
		p.start = ceilMillisecond(start).UTC()
	}
	if !end.IsZero() {
		if !inRange(end) {
			return fieldErr("end_at", "must lie in the years 1 to 9999")
		}
		p.end = end.Truncate(time.Millisecond).UTC()
	}
	if !p.start.IsZero() && !p.end.IsZero() && p.end.Before(p.start) {
		return fieldErr("end_at", "end_at is before start_at")
	}
	return nil
}

func ceilMillisecond(t time.Time) time.Time {
	if r := t.Truncate(time.Millisecond); r.Before(t) {
		return r.Add(time.Millisecond)
	}
	return t
}

// checkFires reports a schedule with no instant from its anchor on.
func (p *Pattern) checkFires() error {
	if _, ok := p.Next(p.anchor.Add(-time.Millisecond)); ok {
		return nil
	}
	if p.end.IsZero() {
		return fieldErr("start_at", "the schedule never fires after start_at before the year 10000")
	}
	if first, ok := p.after(maxTime(p.anchor, p.start).Add(-time.Millisecond)); ok && !first.After(maxInstant) {
		return fieldErr("end_at", "the schedule never fires before end_at (its first instant would be %s)", first.Format(time.RFC3339Nano))
	}
	return fieldErr("end_at", "the schedule never fires before end_at")
}

// Next returns the first instant strictly after t (truncated to the
// millisecond) at which the schedule fires, in UTC, and false when there is
// none (past end_at). Instants before start_at are never returned.
func (p *Pattern) Next(t time.Time) (time.Time, bool) {
	if p.jitter > 0 {
		return p.nextJittered(t)
	}
	return p.nextInstant(t)
}

// nextInstant is Next without jitter.
func (p *Pattern) nextInstant(t time.Time) (time.Time, bool) {
	lower := t.Truncate(time.Millisecond)
	if !p.start.IsZero() && lower.Before(p.start) {
		lower = p.start.Add(-time.Millisecond)
	}
	if lower.Before(minInstant) {
		lower = minInstant.Add(-time.Millisecond)
	}
	next, ok := p.after(lower)
	if !ok || next.After(maxInstant) || (!p.end.IsZero() && next.After(p.end)) {
		return time.Time{}, false
	}
	return next, true
}

// after returns the pattern's first instant after lower, ignoring the bounds.
func (p *Pattern) after(lower time.Time) (time.Time, bool) {
	if !lower.Before(maxInstant) {
		return time.Time{}, false
	}
	if p.cron == nil {
		return p.everyAfter(lower), true
	}
	return p.cronAfter(lower)
}

// NextN returns up to n instants after t, in order: fewer when the schedule
// ends first.
func (p *Pattern) NextN(t time.Time, n int) []time.Time {
	out := make([]time.Time, 0, min(max(n, 0), 64))
	for len(out) < n {
		next, ok := p.Next(t)
		if !ok {
			break
		}
		out = append(out, next)
		t = next
	}
	return out
}

// Period is a rough typical gap between instants, for sizing precomputation
// buffers: every itself, or for cron the gap between the pattern's first two
// instants after the anchor (bounds aside).
func (p *Pattern) Period() time.Duration { return p.period }

func (p *Pattern) measurePeriod() time.Duration {
	if p.cron == nil {
		return p.every
	}
	a, ok := p.after(p.anchor)
	if !ok {
		return 0
	}
	b, ok := p.after(a)
	if !ok {
		return 0
	}
	return b.Sub(a)
}

// String gives the normalized value of the field that was set, for display:
// the cron expression with single spaces and upper-case names (macros in
// lower case), or the every duration as time.Duration writes it ("1m30s").
// Parsing it again in the same field gives the same pattern.
func (p *Pattern) String() string {
	if p.cron == nil {
		return p.every.String()
	}
	return p.cron.expr
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Of parses the pattern of a stored schedule. An interval counts from its
// Anchor.
func Of(sc kairos.Schedule) (*Pattern, error) {
	every := ""
	if sc.Every > 0 {
		every = sc.Every.String()
	}
	p, err := Parse(sc.Cron, every, sc.Timezone, Anchor(sc), sc.StartAt, sc.EndAt)
	if err != nil || sc.Jitter <= 0 {
		return p, err
	}
	return p.WithJitter(sc.ID, sc.Jitter), nil
}

// Anchor is the instant a schedule's interval counts from: its start_at,
// or else its creation (kept when the schedule is replaced).
func Anchor(sc kairos.Schedule) time.Time {
	if sc.StartAt.IsZero() {
		return sc.CreatedAt
	}
	return sc.StartAt
}
