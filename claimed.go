package kairos

import "time"

// Claimed is a job a claim handed out, as a worker pops it from its
// topic's ready list: an attempt is started on it (Job.Attempts is that
// attempt's number), and it must not fire before Due.
type Claimed struct {
	Job Job
	// Due is when it may fire, on the Redis clock: its due time, or the
	// later time flow control gave it.
	Due time.Time
	// FireAt is when, on this machine's monotonic clock, the Redis clock
	// has surely reached Due: the pop that took it came after the claim
	// that pushed it, so counting from the pop's reply by the time left at
	// the claim cannot be early, whatever this machine's clock says. Zero
	// when unknown (convert Due to this machine's clock instead).
	FireAt time.Time
	// Paced says that its flow's rate limit gave it Due as it was popped
	// (Topic.Paced): it starts then without asking the gate.
	Paced bool
	// Ticket is the store's own note of where the job was popped from and
	// of its claim, which the store reads back to start or release it.
	// Nothing else reads it; a copy of a Claimed carries it along.
	Ticket any
}

// DefaultReadyLease is how long past its due time a claimed job may wait
// to start before its claim lapses and it is claimed again, unless the
// deployment sets another (KAIROS_READY_LEASE): a worker holds a due job
// for a free callback slot up to half of it.
const DefaultReadyLease = 10 * time.Second
