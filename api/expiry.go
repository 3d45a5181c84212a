package api

import "time"

// expiry reads expires_at or ttl (from runAt). An expiry is kept to the
// millisecond, rounded down: no attempt starts after the instant asked for.
func (req jobRequest) expiry(fe *fieldErrors, runAt, now time.Time) time.Time {
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
	return exp
}
