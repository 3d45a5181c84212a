package callback

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/kairos-sh/kairos"
)

// flowStore is what the flow client needs of the store: the topics, and
// flow control's calls (rate, parallelism permits, circuit breaker).
type flowStore interface {
	Now() time.Time
	GetTopic(ctx context.Context, tenant, name string) (kairos.Topic, error)
	Pace(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, dues, order []time.Time, hold time.Duration) ([]kairos.GateResult, error)
	Gate(ctx context.Context, t kairos.Topic, flow string, jobs []kairos.Job, order []time.Time, lease time.Duration) ([]kairos.GateResult, error)
	ReturnPermit(ctx context.Context, t kairos.Topic, j kairos.Job) error
	BreakerAnswer(ctx context.Context, t kairos.Topic, j kairos.Job, delivered bool) (kairos.Breaker, error)
	deliveryStore
}

// holdAgain is what the flow client needs of the holder (holder fills
// it): the jobs flow control refused a permit for now wait there to be
// asked about again, and those it gave a later time go back to Redis.
type holdAgain interface {
	// again holds cs again after wait, ahead of their topics' other
	// ready jobs, on one timer; nil when the holder is closed and
	// released them.
	again(cs []kairos.Claimed, wait time.Duration) *time.Timer
	// join adds cs to the jobs waiting on t; false when those came back.
	join(t *time.Timer, cs []kairos.Claimed) bool
	// readyNow brings the jobs waiting on t back at once.
	readyNow(t *time.Timer)
	// release gives cs back to the store, to wait there for their Due.
	release(ctx context.Context, cs []kairos.Claimed)
}

// flowClient is this process's side of flow control (the topics' rate
// and parallelism limits and circuit breakers, kept in Redis for every
// process): it paces a rate-limited topic's jobs as they are popped
// (pace), asks the gate as a job is about to fire (gate), keeps the jobs
// of a flow whose permits were all taken waiting here until one is given
// back (fullFlow), and, as an attempt ends, gives its permit back and
// tells the circuit breaker its answer (end). It is safe for concurrent
// use.
type flowClient struct {
	st    flowStore
	hold  holdAgain
	log   *slog.Logger
	retry time.Duration // how soon a job refused a permit is asked about again: fullRetry
	// onBreaker, if set, is told of the answers that open or close a
	// flow's circuit breaker (WorkerConfig.OnBreaker)
	onBreaker func(tenant, topic string, b kairos.Breaker)

	mu    sync.Mutex
	gated map[attemptKey]gated // attempts the gate let go, until they end
	full  map[string]*fullFlow // flows ("tenant/flow") whose permits were all taken
}

// gated is an attempt the gate let go: end gives back its permit, if its
// topic has a parallelism limit, and tells its flow's circuit breaker its
// answer, if the topic has one.
type gated struct {
	topic kairos.Topic
	job   kairos.Job // its key, attempt and flow key
	probe bool       // sent as the breaker's probe
}

// attemptKey names one attempt of a job.
type attemptKey struct {
	key     kairos.JobKey
	attempt int
}

// flowKey names a tenant's flow (kairos.FlowOf) in the flow client's maps:
// "tenant/flow".
func flowKey(tenant, flow string) string { return tenant + "/" + flow }

// fullFlow is a flow whose permits were all taken when last asked: its
// jobs wait without asking until then, and a permit given back here
// (end) wakes them at once.
type fullFlow struct {
	until   time.Time
	waiting *time.Timer // its jobs waiting in the holder (holdAgain.again)
	refused time.Time   // when its jobs were last refused a permit
}

// fullRetry is how soon a job that found its flow's permits taken is
// asked about again.
const fullRetry = 50 * time.Millisecond

// freedQuiet: see flowFreed.
const freedQuiet = 5 * time.Millisecond

// newFlowClient returns a flow client over st, whose refused jobs wait in
// hold.
func newFlowClient(st flowStore, hold holdAgain, logger *slog.Logger) *flowClient {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &flowClient{st: st, hold: hold, log: logger.With("component", "flow"), retry: fullRetry,
		gated: map[attemptKey]gated{}, full: map[string]*fullFlow{}}
}

// waitFull holds cs, jobs of flow f ("tenant/flow") that found its
// permits all taken, to be asked about again after fullRetry: until then,
// the flow's other jobs wait too without asking, and a permit given back
// here (end) brings them all back at once.
func (fc *flowClient) waitFull(f string, cs []kairos.Claimed) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	ff := fc.full[f]
	// the flow's jobs refused meanwhile join those already waiting: they
	// all come back together, so that the one asked about next is the best
	// of them in wait order (the permits go in that order across processes
	// only among the jobs asked about)
	if ff != nil && ff.waiting != nil && fc.hold.join(ff.waiting, cs) {
		ff.refused = time.Now()
		return
	}
	t := fc.hold.again(cs, fc.retry)
	if t == nil {
		return // the holder is closed: released
	}
	if ff == nil {
		ff = &fullFlow{}
		fc.full[f] = ff
	}
	now := time.Now()
	if !now.Before(ff.until) {
		ff.until = now.Add(fc.retry)
	}
	ff.refused, ff.waiting = now, t
}

// waitsFull reports whether flow f's permits were all taken a moment ago,
// so that its jobs wait without asking.
func (fc *flowClient) waitsFull(f string, now time.Time) bool {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	ff := fc.full[f]
	return ff != nil && now.Before(ff.until)
}

// wakeFull ends flow f's wait for a permit: its waiting jobs ask again now.
func (fc *flowClient) wakeFull(f string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	ff := fc.full[f]
	if ff == nil {
		return
	}
	delete(fc.full, f)
	if ff.waiting != nil {
		fc.hold.readyNow(ff.waiting)
	}
}

// flowFreed is wakeFull for a flow whose permit another process found
// free but kept for a job waiting ahead (Worker.FlowFreed), unless its
// jobs here were refused a permit within freedQuiet: then they are not
// the one it is kept for (which would have got it), and asking again at
// once would only answer the other process's ask with another refusal
// and wake it again, back and forth, while the job it is kept for lapses.
func (fc *flowClient) flowFreed(f string) {
	fc.mu.Lock()
	ff := fc.full[f]
	quiet := ff != nil && time.Since(ff.refused) < freedQuiet
	fc.mu.Unlock()
	if ff != nil && !quiet {
		fc.wakeFull(f)
	}
}

// end ends attempt a of job key in flow control, as its outcome o is
// about to be recorded: it gives back the permit the attempt took, if
// any (and wakes the flow's jobs waiting for one), and tells its topic's
// circuit breaker how it went. It returns the outcome to record: a
// breaker's probe that failed for good is retried instead (with retryAt
// now), as it tested the receiver, not the job.
func (fc *flowClient) end(ctx context.Context, key kairos.JobKey, a kairos.Attempt, o kairos.Outcome, retryAt time.Time) (kairos.Outcome, time.Time) {
	p := attemptKey{key, a.N}
	fc.mu.Lock()
	g, ok := fc.gated[p]
	delete(fc.gated, p)
	fc.mu.Unlock()
	if !ok {
		return o, retryAt
	}
	unstarted := o == kairos.OutcomeExpired && a.Event == kairos.AttemptExpired // no answer to tell the breaker
	if g.probe && o == kairos.OutcomeDead && a.Status != http.StatusGone {
		// A probe of a receiver that is down tests the receiver, not the
		// job: it does not use up the job's last attempt; the job waits
		// with the others for the breaker.
		o, retryAt = kairos.OutcomeRetrying, fc.st.Now()
	}
	if err := fc.st.ReturnPermit(ctx, g.topic, g.job); err != nil {
		fc.log.Warn("give back a flow-control permit; it lapses with its lease", "job", key, "err", err)
	} else if g.topic.TakesPermits() {
		fc.wakeFull(flowKey(g.topic.Tenant, kairos.FlowOf(g.job, g.topic)))
	}
	if g.topic.HasBreaker() && !unstarted {
		b, err := fc.st.BreakerAnswer(ctx, g.topic, g.job, o == kairos.OutcomeDelivered)
		switch {
		case err != nil:
			fc.log.Warn("record an answer in the circuit breaker", "job", key, "err", err)
		case b.State == "open":
			fc.log.Info("circuit breaker open: the flow's jobs wait", "tenant", key.Tenant, "topic", key.Topic, "until", b.Until)
		}
		if err == nil && b.Changed && fc.onBreaker != nil {
			fc.onBreaker(key.Tenant, key.Topic, b)
		}
	}
	return o, retryAt
}
