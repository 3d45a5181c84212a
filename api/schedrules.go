package api

// A schedule's firing rules beyond its pattern: what an instant does while
// the previous occurrence is still running (overlap), how far each
// occurrence is moved off its instant (jitter), and after how many
// occurrences the schedule is done (max_runs).

import (
	"time"

	"github.com/kairos-sh/kairos"
	recur "github.com/kairos-sh/kairos/internal/schedule"
)

// Bounds of a schedule's jitter and max_runs.
const (
	maxJitter  = 7 * 24 * time.Hour
	maxMaxRuns = 1_000_000_000
	// jitterGapLook is how many of a pattern's next instants its jitter
	// is held against: it must be shorter than the gaps between them, so
	// that occurrences keep their order.
	jitterGapLook = 100
)

// The states a schedule answer shows.
const (
	scheduleActive    = "active"
	schedulePaused    = "paused"
	scheduleCompleted = "completed"
)

// firing validates the request's overlap and max_runs into sc, and its
// jitter's syntax and bounds (checkJitter holds it against the pattern).
func (req scheduleRequest) firing(fe *fieldErrors, sc *kairos.Schedule) {
	sc.Overlap = kairos.OverlapAllow
	if req.Overlap != nil {
		switch ov := kairos.Overlap(*req.Overlap); ov {
		case kairos.OverlapAllow, kairos.OverlapSkip, kairos.OverlapBufferOne:
			sc.Overlap = ov
		default:
			fe.add("overlap", "%q is not an overlap rule: use allow (fire while the previous occurrence runs; the default), skip (do not fire then), or buffer_one (fire once it ends; at most one waits)", *req.Overlap)
		}
	}
	if req.MaxRuns != nil {
		if n := *req.MaxRuns; n < 0 || n > maxMaxRuns {
			fe.add("max_runs", "%d is out of range: allowed 1 to %d (0 or none: no bound)", n, maxMaxRuns)
		} else {
			sc.MaxRuns = n
		}
	}
	if req.Jitter != nil {
		sc.Jitter = parseDuration(fe, "jitter", *req.Jitter, 0, maxJitter).Truncate(time.Millisecond)
	}
}

// checkJitter refuses a jitter not shorter than the gaps between p's
// instants after now: occurrences would change order.
func checkJitter(fe *fieldErrors, sc kairos.Schedule, p *recur.Pattern, now time.Time) {
	if sc.Jitter <= 0 {
		return
	}
	if gap := p.ShortestGap(now, jitterGapLook); gap > 0 && sc.Jitter >= gap {
		fe.add("jitter", "%s is not shorter than the gap between the schedule's instants (the shortest of the next %d is %s): make it shorter", fmtDuration(sc.Jitter), jitterGapLook, fmtDuration(gap))
	}
}

// showFiring adds to v what sc has of overlap, jitter and max_runs, and
// the schedule's state.
func showFiring(v *scheduleResponse, sc kairos.Schedule) {
	v.Overlap = sc.Overlap
	if v.Overlap == "" {
		v.Overlap = kairos.OverlapAllow
	}
	if sc.Jitter > 0 {
		v.Jitter = fmtDuration(sc.Jitter)
	}
	v.MaxRuns = sc.MaxRuns
	if sc.MaxRuns > 0 || v.Overlap != kairos.OverlapAllow {
		runs, skipped := sc.Runs, sc.Skipped
		v.Runs, v.Skipped = &runs, &skipped
	}
	switch {
	case sc.Completed:
		v.State = scheduleCompleted
		v.PendingJob, v.NextRuns, v.NextRunsZone = "", []string{}, []string{}
	case sc.Paused:
		v.State = schedulePaused
	default:
		v.State = scheduleActive
	}
}
