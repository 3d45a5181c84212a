package callback

import (
	"context"
	"time"

	"github.com/kairos-sh/kairos"
)

// Store is what delivery needs from the job store, the Redis data model
// (internal/rdb's Store fills it): the ready lists it pops, flow control,
// and the outcome of each attempt.
type Store interface {
	// Now returns the current time on the store's clock; Local converts a
	// time on it to this machine's clock, for timers.
	Now() time.Time
	Local(t time.Time) time.Time
	// PopGroups returns the shards each blocking pop covers.
	PopGroups() [][]int
	// Topics returns every tenant's topics; GetTopic one, cached.
	Topics(ctx context.Context) ([]kairos.Topic, error)
	GetTopic(ctx context.Context, tenant, name string) (kairos.Topic, error)
	// Handles returns each topic's handle, which names its ready lists,
	// or "" for one that never had a job.
	Handles(ctx context.Context, topics []kairos.Topic) ([]string, error)
	// Pop takes up to n jobs from the ready lists hs of the shards of
	// group, blocking up to timeout; Start starts what a pop took (a job
	// fires only once started); Interrupt ends this process's pop of group
	// under way.
	Pop(ctx context.Context, group []int, hs []string, n int, timeout time.Duration) ([]kairos.Claimed, error)
	Start(ctx context.Context, cs []kairos.Claimed) ([]kairos.Claimed, error)
	Interrupt(ctx context.Context, group []int) error
	// Release gives back popped jobs that will not start here: each keeps
	// its due time (or the later Due set) and loses no attempt.
	Release(ctx context.Context, cs []kairos.Claimed) error
	// Pace, Gate, Done and Outcome are flow control: rate, parallelism
	// permits, and the circuit breaker (internal/rdb's flow.go).
	Pace(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, dues, order []time.Time, hold time.Duration) ([]kairos.GateResult, error)
	Gate(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, order []time.Time, lease time.Duration) ([]kairos.GateResult, error)
	Done(ctx context.Context, t kairos.Topic, j kairos.Job) error
	Outcome(ctx context.Context, t kairos.Topic, j kairos.Job, delivered bool) (kairos.Breaker, error)
	// Finish records attempt a's outcome and returns the job's new state,
	// or "" when the attempt was stale (its lease lapsed and another
	// worker has the job). A notice given with a dead outcome is filed as
	// the job's failure notification, with its death.
	Finish(ctx context.Context, key kairos.JobKey, a kairos.Attempt, o kairos.Outcome, retryAt time.Time, notice ...kairos.Notice) (kairos.State, error)
	// SigningSecret returns the current secret that signs tenant's
	// callbacks: the tenant's with topic "", else that topic's own
	// (kairos.Topic.OwnSecret names it).
	SigningSecret(ctx context.Context, tenant, topic string) (string, error)
}
