package api

import (
	"net/http"
	"slices"
	"time"

	"github.com/kairos-sh/kairos"
	recur "github.com/kairos-sh/kairos/internal/schedule"
)

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
