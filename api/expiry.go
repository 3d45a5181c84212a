package api

import (
	"time"

	"github.com/kairos-sh/kairos"
)

// expiryAndPriority reads expires_at or ttl (from runAt) and priority.
// An expiry is kept to the millisecond, rounded down: no attempt starts
// after the instant asked for.
func (req jobRequest) expiryAndPriority(fe *fieldErrors, runAt, now time.Time) (time.Time, int) {
	var exp time.Time
	switch {
	case req.ExpiresAt != nil && req.TTL != nil:
		fe.add("expires_at", "give either expires_at or ttl, not both")
		fe.add("ttl", "give either ttl or expires_at, not both")
	case req.ExpiresAt != nil:
		exp = parseTime(fe, "expires_at", *req.ExpiresAt, now, floorMS)
		if !exp.IsZero() && !runAt.IsZero() && exp.Before(runAt) {
			fe.add("expires_at", "%s is before the job's run_at %s: no attempt could start", formatTime(exp), formatTime(runAt))
			exp = time.Time{}
		}
	case req.TTL != nil:
		exp = floorMS(runAt.Add(parseDuration(fe, "ttl", *req.TTL, 0, maxFuture))).UTC()
	}
	p := 0
	if req.Priority != nil {
		p = *req.Priority
		if p < 0 || p > kairos.MaxPriority {
			fe.add("priority", "%d is out of range: allowed 0 (the default) to %d; higher goes first when a flow limit holds jobs back", p, kairos.MaxPriority)
			p = 0
		}
	}
	return exp, p
}
