package api

import (
	"context"
	"net/http"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/duration"
)

// TickFunc runs the scanner and workers for at most d (a tick) and
// returns what they did; internal/server fills it.
type TickFunc func(ctx context.Context, d time.Duration) (kairos.TickSummary, error)

// Tick lengths: the default, and the longest one request may ask for.
const (
	defaultTick = 55 * time.Second
	maxTick     = 15 * time.Minute
)

type tickRequest struct {
	For string `json:"for"`
}

// tick serves POST /v1/tick, for admins only: it delivers every tenant's jobs.
func (s *Server) tick(w http.ResponseWriter, r *http.Request) {
	if id, _ := auth.FromContext(r.Context()); !id.Admin {
		s.writeError(w, r, errorf(http.StatusForbidden, "a tick delivers every tenant's jobs: it needs an admin token (admin: true)"))
		return
	}
	if s.cfg.Tick == nil {
		s.writeError(w, r, errorf(http.StatusNotFound, "ticks are not served by this process"))
		return
	}
	d := defaultTick
	if r.ContentLength != 0 {
		var req tickRequest
		if err := s.decode(w, r, 1<<10, &req); err != nil {
			s.writeError(w, r, err)
			return
		}
		if req.For != "" {
			v, err := duration.Parse(req.For)
			if err != nil || v <= 0 || v > maxTick {
				s.writeError(w, r, &ValidationError{Errors: []FieldError{{Field: "for", Message: "use a duration above 0 and at most 15m, such as \"55s\""}}})
				return
			}
			d = v
		}
	}
	// the answer comes after the tick: the write deadline moves by it
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + s.cfg.WriteTimeout))
	sum, err := s.cfg.Tick(r.Context(), d)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sum)
}
