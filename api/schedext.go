package api

import (
	"net/http"
	"slices"
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

// extFields validates the request's overlap and max_runs into sc, and its
// jitter's syntax and bounds (checkJitter holds it against the pattern).
func (req scheduleRequest) extFields(fe *fieldErrors, sc *kairos.Schedule) {
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

// showExt adds to v what sc has of overlap, jitter and max_runs.
func showExt(v *scheduleResponse, sc kairos.Schedule) {
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

// backfillRequest is the body of POST .../schedules/{id}/backfill.
type backfillRequest struct {
	From *string `json:"from"`
	To   *string `json:"to"`
}

// backfillResponse says how many instants the backfill fired.
type backfillResponse struct {
	Instants int `json:"instants"`
}

// backfillBound reads a backfill bound, which is required (parseBound).
func backfillBound(fe *fieldErrors, field string, s *string) time.Time {
	if s == nil {
		fe.add(field, "required: an RFC 3339 time such as \"2026-11-21T10:30:00Z\"")
		return time.Time{}
	}
	return parseBound(fe, field, *s)
}

// backfillSchedule handles POST .../schedules/{id}/backfill: each instant
// of the pattern in [from, to) fires once, as its occurrence; one that
// fired already (its job is kept for the retention period) does not fire
// again, and neither do instants from the pending occurrence on, which
// the pattern fires itself. It answers how many fired.
func (s *Server) backfillSchedule(w http.ResponseWriter, r *http.Request) {
	tenant, topic, id, err := s.scheduleTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req backfillRequest
	if err := s.decode(w, r, 4<<10, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	var fe fieldErrors
	from, to := backfillBound(&fe, "from", req.From), backfillBound(&fe, "to", req.To)
	if len(fe) == 0 && !from.Before(to) {
		fe.add("to", "%s is not after from (%s): the range is [from, to)", formatTime(to), formatTime(from))
	}
	if err := fe.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	sc, err := s.store.GetSchedule(r.Context(), tenant, topic, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := recur.Of(sc)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	instants, ok := p.Between(from, to, kairos.MaxBackfill)
	if !ok {
		fe.add("to", "[from, to) holds more than %d instants of the schedule: backfill at most %d at a time", kairos.MaxBackfill, kairos.MaxBackfill)
		s.writeError(w, r, fe.err())
		return
	}
	slices.SortFunc(instants, func(a, b time.Time) int { return a.Compare(b) })
	release, err := s.needPending(r.Context(), tenant)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	n, err := s.store.BackfillSchedule(r.Context(), tenant, topic, id, instants)
	release()
	if err != nil && n == 0 {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, backfillResponse{Instants: n})
}
