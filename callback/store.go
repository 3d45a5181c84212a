package callback

import (
	"context"
	"time"

	"github.com/kairos-sh/kairos"
)

// Store is what delivery needs of the job store, in the order a job meets
// it: the ready lists the worker pops, the start of what it popped, flow
// control, and the outcome of each attempt. The wiring fills it with
// internal/rdb's Store; the holder and the flow client each take the few
// methods they call (holdStore, flowStore).
type Store interface {
	// Now returns the current time on the store's clock, the one that
	// decides what is due; Local converts a time on it to this machine's
	// clock, for timers.
	Now() time.Time
	Local(t time.Time) time.Time
	// Topics returns every tenant's topics; GetTopic one, cached.
	Topics(ctx context.Context) ([]kairos.Topic, error)
	GetTopic(ctx context.Context, tenant, name string) (kairos.Topic, error)
	// Handles returns each topic's handle, which names its ready lists,
	// or "" for one that never had a job.
	Handles(ctx context.Context, topics []kairos.Topic) ([]string, error)
	// PopGroups returns the shards each blocking pop covers.
	PopGroups() [][]int
	// Pop takes up to n jobs from the ready lists hs of the shards of
	// group, blocking up to timeout (whole seconds: a shorter one blocks
	// a second; Interrupt ends it sooner); it returns none and no error when
	// nothing came or the pop was interrupted. Interrupt ends this
	// process's pop of group under way.
	Pop(ctx context.Context, group []int, hs []string, n int, timeout time.Duration) ([]kairos.Claimed, error)
	Interrupt(ctx context.Context, group []int) error
	// Start starts what a pop took and returns the jobs it started: a job
	// fires only once started, and a job popped twice starts once.
	Start(ctx context.Context, cs []kairos.Claimed) ([]kairos.Claimed, error)
	// Release gives back started jobs that will not fire here: each keeps
	// its due time (or the later Due set) and loses no attempt.
	Release(ctx context.Context, cs []kairos.Claimed) error
	// Pace gives each of jobs of flow (of topic t, Topic.Paced), just
	// popped, due at dues[i], its time from the flow's rate limit:
	// kairos.GateGo with that time when it is at most hold past its due
	// time, else kairos.GateWait with its turn. order[i] is jobs[i]'s
	// place while its flow's jobs wait (kairos.WaitOrder).
	Pace(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, dues, order []time.Time, hold time.Duration) ([]kairos.GateResult, error)
	// Gate says, for each of jobs of flow (of topic t), due, whether it
	// may start now (kairos.GateGo, kairos.GateProbe: taking a permit for
	// up to lease when t has a parallelism limit), must wait until a time
	// (kairos.GateWait), or finds every permit taken (kairos.GateFull);
	// order as for Pace.
	Gate(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, order []time.Time, lease time.Duration) ([]kairos.GateResult, error)
	// ReturnPermit gives back the permit j's attempt took from its flow
	// (nothing when t takes no permits: Topic.TakesPermits).
	ReturnPermit(ctx context.Context, t kairos.Topic, j kairos.Job) error
	// BreakerAnswer tells j's flow's circuit breaker the answer to j's
	// attempt (nothing when t has none: Topic.HasBreaker) and returns the
	// breaker's state.
	BreakerAnswer(ctx context.Context, t kairos.Topic, j kairos.Job, delivered bool) (kairos.Breaker, error)
	// Finish records attempt a's outcome and returns the job's new state,
	// or "" when the attempt was stale (its lease lapsed and another
	// worker has the job). A notice given with a dead or expired outcome
	// is filed as the job's failure notification, one given with a
	// delivery as its success notification, in the same write.
	Finish(ctx context.Context, key kairos.JobKey, a kairos.Attempt, o kairos.Outcome, retryAt time.Time, notice ...kairos.Notice) (kairos.State, error)
	// SigningSecret returns the current secret that signs tenant's
	// callbacks: the tenant's with topic "", else that topic's own
	// (kairos.Topic.OwnSecret names it).
	SigningSecret(ctx context.Context, tenant, topic string) (string, error)
	// deliveryStore: a topic's subscriptions, for its deliveries.
	deliveryStore
}
