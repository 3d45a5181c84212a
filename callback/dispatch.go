package callback

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/kairos-sh/kairos"
)

// dispatchConfig tunes a dispatcher. Zero values take the defaults.
type dispatchConfig struct {
	// Hold is how long past its due time a job may wait for a free worker
	// before it is released; keep it below the store's ready lease, which
	// its lease allows for. Default half the default ready lease.
	Hold time.Duration
	// MaxHeld bounds the jobs held (waiting for their due time or for a
	// worker): the pops take no more. Default 5000.
	MaxHeld int
	Logger  *slog.Logger
}

// dispatcher holds the jobs the workers popped from the ready lists until
// their due time, passes them through flow control and hands them to the
// topics' consumers (Next). Claims run a few milliseconds ahead of due
// times (one claim serves many jobs); the dispatcher makes sure that none
// fires before its due time on the Redis clock, and gives back (releases)
// what it cannot start in time, so a job held here keeps its place and
// loses no attempt. It is safe for concurrent use.
type dispatcher struct {
	st  Store
	cfg dispatchConfig
	log *slog.Logger

	mu     sync.Mutex
	topics map[string]*queue                // "tenant/topic"
	timers map[*time.Timer][]kairos.Claimed // jobs waiting for a time
	held   int
	closed bool
	gated  map[attemptKey]gated // attempts flow control let go, until finish
	full   map[string]*fullFlow // flows ("tenant/flow") whose permits were all taken
	room   chan struct{}        // a nudge when held drops below MaxHeld
	// refill is closed, and replaced, when a topic the pops left out for
	// being busy (busy) has fewer due jobs waiting than its mark again
	refill chan struct{}
}

// gated is an attempt flow control let go: Finish gives back its permit,
// if its topic has a parallelism limit, and reports its answer to its
// flow's circuit breaker, if the topic has one.
type gated struct {
	topic kairos.Topic
	job   kairos.Job // its key, attempt and flow key
	probe bool       // sent as the breaker's probe
}

// flowKey names a tenant's flow (kairos.FlowOf) in the dispatcher's maps:
// "tenant/flow".
func flowKey(tenant, flow string) string { return tenant + "/" + flow }

// fullFlow is a flow whose permits were all taken when last asked: its
// jobs wait without asking until then, and a permit given back here
// (Finish) wakes them at once.
type fullFlow struct {
	until   time.Time
	timers  []*time.Timer // of the jobs waiting (requeue)
	refused time.Time     // when its jobs were last refused a permit
}

// firstInLine is the held order given to flow control for a job whose turn
// came and passed (paced, and started too late): ahead of every waiting job.
var firstInLine = time.UnixMilli(1)

// gateFailed marks a job whose flow control call failed: asked again.
const gateFailed kairos.Gate = -1

// attemptKey names one attempt of a job.
type attemptKey struct {
	key     kairos.JobKey
	attempt int
}

// queue is one topic's jobs whose due time has come, oldest due first;
// with jobs of priority among them, in heldOrder.
type queue struct {
	ready  []kairos.Claimed
	low    int           // when ready drops below it, refill is closed (0: no mark)
	signal chan struct{} // a nudge when ready grows
	ranked bool          // kept in heldOrder (put)
	turn   sync.Mutex    // held across a take and its gate while ranked (Next)
}

// put puts c in the queue: behind the jobs of its heldOrder, or ahead of
// them (front). A queue keeps the order jobs are put in until a job of
// priority joins it; from then on it is kept in heldOrder (its topic's
// jobs of priority 0 too: they are ordered against the others even when
// they come back from flow control in groups of their own).
func (q *queue) put(c kairos.Claimed, front bool) {
	if !q.ranked && c.Job.Priority == 0 {
		if front {
			q.ready = slices.Insert(q.ready, 0, c)
		} else {
			q.ready = append(q.ready, c)
		}
		return
	}
	if !q.ranked {
		q.ranked = true
		slices.SortStableFunc(q.ready, func(a, b kairos.Claimed) int { return heldOrder(a).Compare(heldOrder(b)) })
	}
	k := heldOrder(c)
	i := sort.Search(len(q.ready), func(i int) bool {
		o := heldOrder(q.ready[i])
		return o.After(k) || (front && o.Equal(k))
	})
	q.ready = slices.Insert(q.ready, i, c)
}

// heldOrder is when c queues while flow control holds its flow's jobs
// back (kairos.HeldOrder): its due time, or its run_at when earlier (a job
// claimed after its time was due since its run_at, and Due only says when
// it was claimed), less its priority's steps.
func heldOrder(c kairos.Claimed) time.Time {
	due := c.Due
	if !c.Job.RunAt.IsZero() && c.Job.RunAt.Before(due) {
		due = c.Job.RunAt
	}
	return kairos.HeldOrder(c.Job, due)
}

// newDispatcher returns a dispatcher over st.
func newDispatcher(st Store, cfg dispatchConfig) *dispatcher {
	if cfg.Hold <= 0 {
		cfg.Hold = kairos.DefaultReadyLease / 2
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = 5000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &dispatcher{st: st, cfg: cfg, log: cfg.Logger.With("component", "dispatch"),
		topics: map[string]*queue{}, timers: map[*time.Timer][]kairos.Claimed{}, gated: map[attemptKey]gated{}, full: map[string]*fullFlow{},
		room: make(chan struct{}, 1), refill: make(chan struct{})}
}

// Capacity returns how many more jobs the dispatcher can hold now.
func (d *dispatcher) Capacity() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.MaxHeld - d.held
}

// Held returns how many jobs it holds now.
func (d *dispatcher) Held() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.held
}

// Add takes popped jobs: each becomes available to Next once the Redis
// clock reaches its due time. After Close, they are released at once.
func (d *dispatcher) Add(ctx context.Context, cs []kairos.Claimed) {
	cs = d.pace(ctx, cs)
	now := d.st.Now()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.release(ctx, cs)
		return
	}
	d.held += len(cs)
	for _, c := range cs {
		fire := c.FireAt
		if fire.IsZero() {
			fire = d.st.Local(c.Due)
		}
		if !c.Due.After(now) && !fire.After(time.Now()) {
			d.readyLocked(c)
			continue
		}
		d.timerLocked([]kairos.Claimed{c}, time.Until(fire), false)
	}
	d.mu.Unlock()
}

// paceHold is how far past its due time a job's rate-limited time may be
// for the dispatcher to hold it until then; a later one goes back to Redis
// to wait for it. Well under the ready lease, which the job's lease allows
// for past its due time.
const paceHold = 100 * time.Millisecond

// pace gives each job of a topic with a rate limit alone (Topic.Paceable)
// its time from the flow's rate as it is claimed, one call a flow for the
// whole claim (Store.Pace), instead of one Gate call as each comes due: a
// job keeps its due time while the rate allows it, or is held until its
// later time, or given back to Redis until then when that is further than
// paceHold. It returns the jobs to hold. A job whose call failed is held
// as it is, and asks Gate when due.
func (d *dispatcher) pace(ctx context.Context, cs []kairos.Claimed) []kairos.Claimed {
	type group struct {
		topic kairos.Topic
		flow  string
		idx   []int
	}
	var groups []*group
	byFlow := map[string]*group{}
	type topicOf struct {
		t  kairos.Topic
		ok bool // found, and Paceable
	}
	topics := map[kairos.JobKey]topicOf{} // one lookup a topic of the claim (the ID left empty)
	now := d.st.Now()
	for i, c := range cs {
		if _, ok := kairos.NoticeOf(c.Job.ID); ok || c.Paced || c.Job.Expired(now) {
			continue
		}
		tk := kairos.JobKey{Tenant: c.Job.Tenant, Topic: c.Job.Topic}
		to, seen := topics[tk]
		if !seen {
			t, err := d.st.GetTopic(ctx, tk.Tenant, tk.Topic)
			to = topicOf{t, err == nil && t.Paceable()}
			topics[tk] = to
		}
		if !to.ok {
			continue
		}
		t := to.t
		f := kairos.FlowOf(c.Job, t)
		k := flowKey(t.Tenant, f)
		g := byFlow[k]
		if g == nil {
			g = &group{topic: t, flow: f}
			byFlow[k] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	if len(groups) == 0 {
		return cs
	}
	var wait []kairos.Claimed
	back := make([]bool, len(cs))
	for _, g := range groups {
		// oldest due first: each then mostly takes its own time from the
		// pace on; with jobs of priority among them, in heldOrder, so that
		// those take the earlier times
		cmp := func(a, b int) int { return cs[a].Due.Compare(cs[b].Due) }
		if slices.ContainsFunc(g.idx, func(i int) bool { return cs[i].Job.Priority > 0 }) {
			cmp = func(a, b int) int { return heldOrder(cs[a]).Compare(heldOrder(cs[b])) }
		}
		slices.SortStableFunc(g.idx, cmp)
		jobs, dues, order := make([]kairos.Job, len(g.idx)), make([]time.Time, len(g.idx)), make([]time.Time, len(g.idx))
		for k, i := range g.idx {
			jobs[k], dues[k], order[k] = cs[i].Job, cs[i].Due, heldOrder(cs[i])
		}
		rs, err := d.st.Pace(ctx, g.topic, g.flow, jobs, dues, order, paceHold)
		if err != nil {
			d.log.Warn("flow control; the jobs ask again when due", "tenant", g.topic.Tenant, "topic", g.topic.Name, "err", err)
			continue
		}
		for k, i := range g.idx {
			c := &cs[i]
			if shift := rs[k].At.Sub(c.Due); shift > 0 {
				c.Due = rs[k].At
				if !c.FireAt.IsZero() {
					c.FireAt = c.FireAt.Add(shift)
				}
			}
			if rs[k].Gate == kairos.GateWait {
				wait, back[i] = append(wait, *c), true
				continue
			}
			c.Paced = true
		}
	}
	if len(wait) == 0 {
		return cs
	}
	d.release(ctx, wait)
	keep := cs[:0:0]
	for i, c := range cs {
		if !back[i] {
			keep = append(keep, c)
		}
	}
	return keep
}

// timerLocked makes cs ready after wait: at the end of their topics'
// queues, or ahead of them (front).
func (d *dispatcher) timerLocked(cs []kairos.Claimed, wait time.Duration, front bool) *time.Timer {
	var t *time.Timer
	t = time.AfterFunc(wait, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		cs, ok := d.timers[t] // requeueFull may have added jobs
		if !ok {
			return // Close took them
		}
		delete(d.timers, t)
		if !front {
			for _, c := range cs {
				d.readyLocked(c)
			}
			return
		}
		d.frontLocked(cs)
	})
	d.timers[t] = cs
	return t
}

func (d *dispatcher) queueLocked(tenant, topic string) *queue {
	name := tenant + "/" + topic
	q := d.topics[name]
	if q == nil {
		q = &queue{signal: make(chan struct{}, 1)}
		d.topics[name] = q
	}
	return q
}

func (d *dispatcher) readyLocked(c kairos.Claimed) {
	q := d.queueLocked(c.Job.Tenant, c.Job.Topic)
	q.put(c, false)
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// frontLocked puts cs ahead of their topics' other ready jobs (of no
// higher priority), in order.
func (d *dispatcher) frontLocked(cs []kairos.Claimed) {
	for i := len(cs) - 1; i >= 0; i-- {
		q := d.queueLocked(cs[i].Job.Tenant, cs[i].Job.Topic)
		q.put(cs[i], true)
		select {
		case q.signal <- struct{}{}:
		default:
		}
	}
}

// Next hands out up to n of a topic's jobs whose due time has come,
// waiting up to wait for one. Jobs that waited past their due time longer
// than Hold are released instead (their claim's lease would lapse while
// they ran).
func (d *dispatcher) Next(ctx context.Context, tenant, topic string, n int, wait time.Duration) []kairos.Job {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		// a queue kept in priority order is taken and gated by one caller
		// at a time: two takes asking flow control at once could let the
		// second one's job (of lower priority) have the flow's permit
		d.mu.Lock()
		q := d.queueLocked(tenant, topic)
		turn := q.ranked
		d.mu.Unlock()
		if turn {
			q.turn.Lock()
		}
		cs, overdue, _ := d.take(tenant, topic, n)
		if len(overdue) > 0 {
			d.release(context.WithoutCancel(ctx), overdue)
		}
		jobs := d.gate(context.WithoutCancel(ctx), tenant, topic, cs)
		if turn {
			q.turn.Unlock()
		}
		if len(jobs) > 0 {
			return jobs
		}
		select {
		case <-ctx.Done():
			return nil
		case <-deadline.C:
			return nil
		case <-q.signal:
		}
	}
}

// gate returns the jobs of cs that their topic's flow control lets start
// now. The others keep their place: one told to wait (its turn under the
// rate limit, or the breaker's cool-down) goes back to Redis until then
// (Release; it keeps its attempts and its place in held order),
// one that found every permit taken waits here, first in its queue, and
// is asked about again after fullRetry (or released like any job held
// longer than Config.Hold).
func (d *dispatcher) gate(ctx context.Context, tenant, topic string, cs []kairos.Claimed) []kairos.Job {
	if len(cs) == 0 {
		return nil
	}
	jobs := make([]kairos.Job, len(cs))
	for i, c := range cs {
		jobs[i] = c.Job
	}
	t, err := d.st.GetTopic(ctx, tenant, topic)
	if err != nil || !t.Limited() {
		return jobs // no topic (a job with its own URL), or no limits
	}
	// Some go without asking: failure notifications (they go to the
	// failure URL: the limits and the breaker of the topic's callback URL
	// are not theirs), jobs past their expiry, and jobs paced as they were claimed, at their time
	// (one later than kairos.PacedLate asks again, for a new time).
	var unasked []kairos.Job
	paceable, now := t.Paceable(), d.st.Now()
	for i := 0; i < len(cs); {
		_, notice := kairos.NoticeOf(cs[i].Job.ID)
		// an expired job takes no place in the limits: the consumer ends it (Worker.expire)
		if notice || cs[i].Job.Expired(now) || (paceable && cs[i].Paced && !now.After(cs[i].Due.Add(kairos.PacedLate))) {
			unasked = append(unasked, cs[i].Job)
			cs, jobs = slices.Delete(cs, i, i+1), slices.Delete(jobs, i, i+1)
			continue
		}
		i++
	}
	if len(cs) == 0 {
		return unasked
	}
	// jobs with their own flow key count against that flow: one script
	// call a flow
	rs := make([]kairos.GateResult, len(jobs))
	var flows []string
	byFlow := map[string][]int{}
	flowOf := make([]string, len(jobs)) // each job's flow key ("tenant/flow")
	for i, j := range jobs {
		f := kairos.FlowOf(j, t)
		if _, ok := byFlow[f]; !ok {
			flows = append(flows, f)
		}
		byFlow[f] = append(byFlow[f], i)
		flowOf[i] = flowKey(t.Tenant, f)
	}
	var failed []kairos.Claimed
	wall := time.Now()
	for _, f := range flows {
		idx := byFlow[f]
		if t.Parallelism > 0 {
			d.mu.Lock()
			ff := d.full[flowOf[idx[0]]]
			waiting := ff != nil && wall.Before(ff.until)
			d.mu.Unlock()
			if waiting { // its permits were all taken a moment ago: wait without asking
				for _, i := range idx {
					rs[i].Gate = kairos.GateFull
				}
				continue
			}
			if len(idx) > t.Parallelism {
				// no more than the limit can go at once: the rest wait
				// without asking (a backlog would otherwise send every
				// waiting job to the script every fullRetry)
				for _, i := range idx[t.Parallelism:] {
					rs[i].Gate = kairos.GateFull
				}
				idx = idx[:t.Parallelism]
			}
		}
		group, order := make([]kairos.Job, len(idx)), make([]time.Time, len(idx))
		for k, i := range idx {
			// the limits let jobs go in held order across processes; a job
			// whose paced time passed while this process was slow had its
			// turn already: it asks again first in line
			group[k], order[k] = jobs[i], heldOrder(cs[i])
			if paceable && cs[i].Paced {
				order[k] = firstInLine
			}
		}
		grs, err := d.st.Gate(ctx, t, f, group, order, t.WithDefaults().Timeout+kairos.DefaultReadyLease)
		if err != nil {
			d.log.Warn("flow control; the jobs wait and are asked about again", "tenant", tenant, "topic", topic, "err", err)
			for _, i := range idx {
				rs[i].Gate = gateFailed
				failed = append(failed, cs[i])
			}
			continue
		}
		for k, i := range idx {
			rs[i] = grs[k]
		}
	}
	d.requeue(failed)
	out := unasked
	var wait []kairos.Claimed
	full := map[string][]kairos.Claimed{}
	d.mu.Lock()
	for i, r := range rs {
		p := attemptKey{jobs[i].JobKey, jobs[i].Attempts}
		switch r.Gate {
		case gateFailed:
		case kairos.GateGo, kairos.GateProbe:
			out = append(out, jobs[i])
			d.gated[p] = gated{topic: t, job: jobs[i], probe: r.Gate == kairos.GateProbe}
		case kairos.GateWait:
			c := cs[i]
			c.Due = r.At
			wait = append(wait, c)
		default:
			full[flowOf[i]] = append(full[flowOf[i]], cs[i])
		}
	}
	d.mu.Unlock()
	d.release(ctx, wait)
	for f, cs := range full {
		d.requeueFull(f, cs)
	}
	return out
}

// requeue holds cs again, ahead of their topics' other ready jobs, after
// fullRetry.
func (d *dispatcher) requeue(cs []kairos.Claimed) {
	if len(cs) > 0 {
		d.requeueThen(cs, nil)
	}
}

// requeueThen is requeue; then, with the lock held, it calls then (if
// set) with the jobs' timer. After Close it releases the jobs.
func (d *dispatcher) requeueThen(cs []kairos.Claimed, then func(*time.Timer)) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.release(context.Background(), cs)
		return
	}
	d.held += len(cs)
	t := d.timerLocked(cs, fullRetry, true)
	if then != nil {
		then(t)
	}
	d.mu.Unlock()
}

// requeueFull is requeue for the jobs of flow f ("tenant/flow") that found
// its permits all taken: until fullRetry, the flow's other jobs wait too
// without asking, and a permit given back here (Finish) wakes them all.
func (d *dispatcher) requeueFull(f string, cs []kairos.Claimed) {
	d.mu.Lock()
	if ff := d.full[f]; ff != nil && !d.closed && len(ff.timers) > 0 {
		// the flow's jobs refused meanwhile join those already waiting: they
		// all come back together, so that the one asked about next is the
		// best of them in held order (the permits go in that order across
		// processes only among the jobs asked about)
		last := ff.timers[len(ff.timers)-1]
		if w, ok := d.timers[last]; ok {
			d.timers[last] = append(w, cs...)
			d.held += len(cs)
			ff.refused = time.Now()
			d.mu.Unlock()
			return
		}
	}
	d.mu.Unlock()
	d.requeueThen(cs, func(t *time.Timer) {
		ff := d.full[f]
		if ff == nil {
			ff = &fullFlow{}
			d.full[f] = ff
		}
		now := time.Now()
		if !now.Before(ff.until) {
			ff.until = now.Add(fullRetry)
		}
		ff.refused = now
		if len(ff.timers) >= 64 { // drop those that fired
			ff.timers = slices.DeleteFunc(ff.timers, func(t *time.Timer) bool { _, ok := d.timers[t]; return !ok })
		}
		ff.timers = append(ff.timers, t)
	})
}

// wakeFull ends flow f's wait for a permit: its waiting jobs ask again now.
func (d *dispatcher) wakeFull(f string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ff := d.full[f]
	if ff == nil {
		return
	}
	delete(d.full, f)
	// the waiting jobs are ready again at once, all in this one hold of the
	// lock, so that a take cannot find some of them back and not others
	// (which would let a job of lower priority take the permit)
	for _, t := range ff.timers {
		if cs, ok := d.timers[t]; ok {
			t.Stop()
			delete(d.timers, t)
			d.frontLocked(cs)
		}
	}
}

// flowFreed is wakeFull for a flow whose permit another process found
// free but kept for a job waiting ahead (Worker.FlowFreed), unless its
// jobs here were refused a permit within freedQuiet: then they are not
// the one it is kept for (which would have got it), and asking again at
// once would only answer the other process's ask with another refusal
// and wake it again, back and forth, while the job it is kept for lapses.
func (d *dispatcher) flowFreed(f string) {
	d.mu.Lock()
	ff := d.full[f]
	quiet := ff != nil && time.Since(ff.refused) < freedQuiet
	d.mu.Unlock()
	if ff != nil && !quiet {
		d.wakeFull(f)
	}
}

// freedQuiet: see flowFreed.
const freedQuiet = 5 * time.Millisecond

// fullRetry is how soon a job that found its flow's permits taken is
// asked about again.
const fullRetry = 50 * time.Millisecond

// finish records an attempt (Store.Finish), after giving back the
// flow-control permit it held, if any, and telling its topic's circuit
// breaker how it went.
func (d *dispatcher) finish(ctx context.Context, key kairos.JobKey, a kairos.Attempt, o kairos.Outcome, retryAt time.Time, notice ...kairos.Notice) (kairos.State, error) {
	p := attemptKey{key, a.N}
	d.mu.Lock()
	g, held := d.gated[p]
	delete(d.gated, p)
	d.mu.Unlock()
	unstarted := o == kairos.OutcomeExpired && a.Event == kairos.AttemptExpired // no answer to tell the breaker
	if held && g.probe && o == kairos.OutcomeDead && a.Status != http.StatusGone {
		// A probe of a receiver that is down tests the receiver, not the
		// job: it does not use up the job's last attempt; the job waits
		// with the others for the breaker.
		o, retryAt = kairos.OutcomeRetrying, d.st.Now()
	}
	if held {
		if err := d.st.Done(ctx, g.topic, g.job); err != nil {
			d.log.Warn("give back a flow-control permit; it lapses with its lease", "job", key, "err", err)
		} else if g.topic.Parallelism > 0 {
			d.wakeFull(flowKey(g.topic.Tenant, kairos.FlowOf(g.job, g.topic)))
		}
		if g.topic.BreakerFailures > 0 && !unstarted {
			b, err := d.st.Outcome(ctx, g.topic, g.job, o == kairos.OutcomeDelivered)
			switch {
			case err != nil:
				d.log.Warn("record an answer in the circuit breaker", "job", key, "err", err)
			case b.State == "open":
				d.log.Info("circuit breaker open: the flow's jobs wait", "tenant", key.Tenant, "topic", key.Topic, "until", b.Until)
			}
		}
	}
	return d.st.Finish(ctx, key, a, o, retryAt, notice...) // a notice goes with a death only
}

// take removes up to n ready jobs of a topic, and those overdue.
func (d *dispatcher) take(tenant, topic string, n int) (jobs []kairos.Claimed, overdue []kairos.Claimed, q *queue) {
	now := d.st.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	q = d.queueLocked(tenant, topic)
	before := d.held
	i := 0
	for ; i < len(q.ready) && len(jobs) < n; i++ {
		c := q.ready[i]
		if now.Sub(c.Due) > d.cfg.Hold {
			overdue = append(overdue, c)
			continue
		}
		jobs = append(jobs, c)
	}
	q.ready = q.ready[i:]
	d.held -= len(jobs) + len(overdue)
	if before >= d.cfg.MaxHeld && d.held < d.cfg.MaxHeld {
		d.nudgeRoom()
	}
	if q.low > 0 && len(q.ready) < q.low {
		q.low = 0
		close(d.refill)
		d.refill = make(chan struct{})
	}
	if len(q.ready) > 0 { // more for the next caller
		select {
		case q.signal <- struct{}{}:
		default:
		}
	}
	return jobs, overdue, q
}

func (d *dispatcher) release(ctx context.Context, cs []kairos.Claimed) {
	if len(cs) == 0 {
		return
	}
	// Releasing a job twice is harmless (the second finds it no longer
	// claimed), so a release whose answer was lost is tried again, for a
	// while, before its jobs are left to their leases.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := d.st.Release(ctx, cs)
		if err == nil {
			d.log.Debug("released held jobs", "jobs", len(cs))
			return
		}
		select {
		case <-ctx.Done():
			d.log.Warn("release held jobs; they are handed out again when their leases lapse", "jobs", len(cs), "err", err)
			return
		case <-time.After(wait):
		}
	}
}

// nudgeRoom tells a pop waiting for room that there is some.
func (d *dispatcher) nudgeRoom() {
	select {
	case d.room <- struct{}{}:
	default:
	}
}

// busy reports whether limit or more of a topic's jobs are due and wait
// for a worker, so that its pops may leave it out. When it is, the
// channel refillSignal returns is closed once fewer than limit wait.
func (d *dispatcher) busy(tenant, topic string, limit int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	q := d.topics[tenant+"/"+topic]
	if q == nil || len(q.ready) < limit {
		return false
	}
	q.low = limit
	return true
}

// refillSignal returns a channel closed when a topic found busy since the
// call has fewer due jobs waiting than its limit: its pops take it again.
// Take it before asking busy, so that no drain falls between the two.
func (d *dispatcher) refillSignal() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refill
}

// waiting returns how many of a topic's jobs are due and wait for a worker.
func (d *dispatcher) waiting(tenant, topic string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if q := d.topics[tenant+"/"+topic]; q != nil {
		return len(q.ready)
	}
	return 0
}

// Close stops holding: every job not handed out yet is released, so that
// another process fires it without waiting for its lease. Jobs added later
// are released at once.
func (d *dispatcher) Close(ctx context.Context) {
	d.mu.Lock()
	d.closed = true
	var rest []kairos.Claimed
	for t, cs := range d.timers {
		t.Stop()
		rest = append(rest, cs...)
	}
	d.timers = map[*time.Timer][]kairos.Claimed{}
	for _, q := range d.topics {
		rest = append(rest, q.ready...)
		q.ready = nil
	}
	d.held = 0
	d.mu.Unlock()
	d.nudgeRoom()
	d.release(ctx, rest)
	if len(rest) > 0 {
		d.log.Info("released held jobs at shutdown", "jobs", len(rest))
	}
}
