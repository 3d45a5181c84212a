package kairos

import "time"

// Gate is flow control's answer about a claimed job: whether its topic's
// limits (rate, parallelism, circuit breaker) let it start now.
type Gate int

const (
	// GateGo: the job may start now (taking a permit when its topic has a
	// parallelism limit, given back when its attempt ends).
	GateGo Gate = iota
	// GateWait: a limit makes it wait until a later time (GateResult.At:
	// its turn under the rate limit, or the end of the circuit breaker's
	// cool-down); it goes back to Redis until then, due at that time.
	GateWait
	// GateFull: every permit of its flow is taken; ask again shortly.
	GateFull
	// GateProbe: the job may start now as its flow's circuit breaker's
	// probe: its answer closes the breaker or opens it again.
	GateProbe
)

// GateResult is flow control's answer for one job.
type GateResult struct {
	Gate Gate
	At   time.Time // GateWait: the time reserved; a pace's GateGo: the time to start at
}

// PacedLate is how long after the time the rate limit gave it a job may
// still start on that time (RATE_LATE in the scripts' prelude; lua/flow.lua). A job later than
// that asks the gate for a new time: its old one passed unused.
const PacedLate = 10 * time.Millisecond
