package callback

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/tracing"
)

// Event describes one finished attempt, for stats and metrics.
type Event struct {
	Job      kairos.Job // resolved against its topic
	Attempt  kairos.Attempt
	State    kairos.State  // the job's new state; "" for a stale attempt
	Lateness time.Duration // attempt start minus DueAt(Job)
}

// DueAt is when a job became due to kairos: the later of its run_at and its
// creation. A job created with a run_at in the past fires at once and is
// not late by the time before it existed.
func DueAt(j kairos.Job) time.Time {
	if j.CreatedAt.After(j.RunAt) {
		return j.CreatedAt
	}
	return j.RunAt
}

// WorkerConfig tunes a Worker. Zero values take the defaults.
type WorkerConfig struct {
	AllowPrivate bool           // permit loopback, private and link-local targets
	Proxy        *url.URL       // forward proxy for every callback (Egress.Proxy); nil: direct
	RootCAs      *x509.CertPool // roots for receivers' certificates; nil: the system's
	TopicPoll    time.Duration  // how often the topic list is re-read; default 1s
	Wait         time.Duration  // longest blocking pop; default 30s (a topic change or shutdown interrupts it)
	Grace        time.Duration  // how long in-flight callbacks may finish at shutdown; default 30s
	// Hold is how long past its due time a popped job may wait for a free
	// callback slot before it is given back; keep it below the store's
	// ready lease. Default 5s.
	Hold      time.Duration
	Logger    *slog.Logger
	OnAttempt func(Event) // called after each attempt, if set
	// OnBreaker, if set, is called when an attempt's answer opens or
	// closes its topic's circuit breaker (b.Changed; b.State is then
	// "open" or "closed").
	OnBreaker func(tenant, topic string, b kairos.Breaker)
	// Tracer traces attempts (internal/tracing); nil does not trace, and
	// callbacks still carry the trace context of their job's create.
	Tracer trace.TracerProvider
}

// Worker delivers the jobs the scanners push onto the ready lists: one
// blocking pop a shard takes them (pop.go), a dispatcher holds each until
// its due time and lets flow control decide when it starts, and each
// topic's consumer takes as many at once as the topic has free callback
// slots (its concurrency), fires each in a goroutine of its own and
// records its outcome. Topics registered while it runs are popped and get
// a consumer at once when a wake message says so, within TopicPoll
// otherwise.
type Worker struct {
	st     Store
	disp   *dispatcher
	client *Client
	cfg    WorkerConfig
	log    *slog.Logger
	lists  popLists

	topics   map[string]*topicRun
	longest  atomic.Int64 // the longest callback timeout of the topics, as last read (ns)
	inflight atomic.Int64
	secrets  sync.Map // tenant, or tenant "/" topic for a topic's own -> cachedSecret
	deliver  context.Context
	kick     chan struct{}
	tracer   trace.Tracer
}

type topicRun struct {
	topic  atomic.Pointer[kairos.Topic]
	cancel context.CancelFunc
	busy   atomic.Int64  // callback slots taken: callbacks in flight and pops under way
	freed  chan struct{} // a nudge when one ends
}

type cachedSecret struct {
	secret string
	at     time.Time
}

// NewWorker returns a Worker over st.
func NewWorker(st Store, cfg WorkerConfig) *Worker {
	if cfg.TopicPoll <= 0 {
		cfg.TopicPoll = time.Second
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 30 * time.Second
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider()
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 5 * time.Second
	}
	log := cfg.Logger.With("component", "worker")
	return &Worker{st: st, disp: newDispatcher(st, dispatchConfig{Hold: cfg.Hold, Logger: cfg.Logger, OnBreaker: cfg.OnBreaker}),
		client: NewEgressClient(Egress{AllowPrivate: cfg.AllowPrivate, Proxy: cfg.Proxy, RootCAs: cfg.RootCAs}, log), cfg: cfg, log: log,
		topics: map[string]*topicRun{}, kick: make(chan struct{}, 1), tracer: cfg.Tracer.Tracer(tracing.Scope), lists: newPopLists()}
}

// Refresh makes the worker re-read the topic list now rather than at its
// next poll; the API calls it after a topic changes.
func (w *Worker) Refresh() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// FlowFreed tells the worker that flow ("<tenant>/<flow>", rdb.Wake.Flow)
// has a parallelism permit free that is kept for a job waiting ahead in
// held order: its jobs waiting here for a permit ask again now, rather
// than at their next retry, in case that job is held here.
func (w *Worker) FlowFreed(flow string) {
	w.disp.flowFreed(flow)
}

// LongestTimeout returns the longest callback timeout of the topics as the
// worker last read them (kairos.DefaultTimeout before it has read any):
// what a claim's lease must cover for a job that sets no timeout of its own.
func (w *Worker) LongestTimeout() time.Duration {
	if d := time.Duration(w.longest.Load()); d > 0 {
		return d
	}
	return kairos.DefaultTimeout
}

// InFlight returns the number of callbacks being fired now.
func (w *Worker) InFlight() int64 { return w.inflight.Load() }

// Run delivers until ctx ends. Then it stops popping, gives back the jobs
// it holds that have not started, and lets in-flight callbacks finish
// within the grace period; callbacks still running after it are
// cancelled, and their jobs are handed out again when their leases lapse.
func (w *Worker) Run(ctx context.Context) error {
	var wg, pops sync.WaitGroup
	deliverCtx, stopNow := context.WithCancel(context.WithoutCancel(ctx))
	defer stopNow()
	w.deliver = deliverCtx
	tick := time.NewTicker(w.cfg.TopicPoll)
	defer tick.Stop()
	w.sync(ctx, &wg)
	for _, g := range w.st.PopGroups() {
		pops.Go(func() { w.pop(ctx, g) })
	}
	for {
		select {
		case <-ctx.Done():
			w.interruptPops()
			pops.Wait()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(w.cfg.Grace):
				w.log.Warn("grace period over; cancelling in-flight callbacks", "in_flight", w.inflight.Load())
				stopNow()
				<-done
			}
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			w.disp.Close(cctx) // what was popped and not started goes back, keeping its place
			cancel()
			w.log.Info("workers stopped")
			return nil
		case <-tick.C:
		case <-w.kick:
		}
		w.sync(ctx, &wg)
	}
}

// sync starts, resizes and stops topic consumers to match the topic list.
func (w *Worker) sync(ctx context.Context, wg *sync.WaitGroup) {
	if ctx.Err() != nil {
		return
	}
	topics, err := w.st.Topics(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("read topics", "err", err)
		}
		return
	}
	w.setLists(ctx, topics)
	seen := make(map[string]bool, len(topics))
	var longest time.Duration
	for _, t := range topics {
		longest = max(longest, t.WithDefaults().Timeout)
		name := t.Tenant + "/" + t.Name
		seen[name] = true
		t := t.WithDefaults()
		run := w.topics[name]
		if run == nil {
			run = &topicRun{}
			w.topics[name] = run
			w.log.Info("consuming topic", "tenant", t.Tenant, "topic", t.Name, "concurrency", t.Concurrency)
		}
		run.topic.Store(&t)
		if run.cancel == nil {
			cctx, cancel := context.WithCancel(ctx)
			run.cancel, run.freed = cancel, make(chan struct{}, 1)
			wg.Go(func() { w.consume(cctx, run, wg) })
		}
	}
	w.longest.Store(int64(longest))
	for name, run := range w.topics {
		if !seen[name] {
			run.cancel()
			delete(w.topics, name)
			w.log.Info("topic gone; consumer stopped", "topic", name)
		}
	}
}

// consume is a topic's consumer: it reserves the topic's free callback
// slots, takes up to that many due jobs from the dispatcher, fires each in
// its own goroutine (tracked by wg) and records the outcomes, until ctx
// ends. Two takes may be under way at once, so that one waits while the
// other starts its jobs; slots a take did not fill are released.
func (w *Worker) consume(ctx context.Context, run *topicRun, wg *sync.WaitGroup) {
	const pollers = 2
	polls := make(chan struct{}, pollers)
	// pollers and callbacks run on kept goroutines (goPool): a callback's
	// goroutine keeps the stack net/http grew
	gs := newGoPool(wg, ctx.Done(), poolIdle)
	for ctx.Err() == nil {
		t := run.topic.Load()
		busy := run.busy.Load()
		n := int64(t.Concurrency) - busy
		if n <= 0 { // every slot taken: wait for one to free
			select {
			case <-ctx.Done():
			case <-run.freed:
			}
			continue
		}
		if !run.busy.CompareAndSwap(busy, busy+n) { // a slot freed meanwhile: look again
			continue
		}
		select {
		case polls <- struct{}{}:
		case <-ctx.Done():
			run.release(n)
			return
		}
		gs.Go(func() {
			defer func() { <-polls }()
			jobs := w.disp.Next(ctx, t.Tenant, t.Name, int(n), w.cfg.Wait)
			run.release(n - int64(len(jobs)))
			for _, job := range jobs {
				w.inflight.Add(1)
				gs.Go(func() {
					w.fire(w.deliver, job, *run.topic.Load(), func() {
						w.inflight.Add(-1)
						run.release(1)
					})
				})
			}
		})
	}
}

// poolIdle is how long a topic's kept goroutine waits for its next
// callback or poll before it ends.
const poolIdle = 10 * time.Second

// release frees n of a topic's callback slots.
func (r *topicRun) release(n int64) {
	if n <= 0 {
		return
	}
	r.busy.Add(-n)
	select {
	case r.freed <- struct{}{}:
	default:
	}
}

// fire makes one attempt at a started job and records its outcome.
//
// called runs once the callback's HTTP exchange is over, before the outcome
// is recorded: the topic's slot is free again for its next callback. A
// topic with a circuit breaker frees it after the outcome is recorded
// (Finish tells the breaker): a failure the breaker has not heard of yet
// would let the next job start against a receiver the breaker is about to
// shut off.
func (w *Worker) fire(ctx context.Context, job kairos.Job, t kairos.Topic, called func()) {
	j := job.Resolve(t)
	start := w.st.Now()
	if j.Expired(start) {
		w.expire(ctx, j, t, start, called)
		return
	}
	a := kairos.Attempt{N: j.Attempts, At: start}
	tctx, span := w.startAttempt(ctx, j, time.Now())
	var res Result
	if j.CallbackURL == "" {
		res = Result{Permanent: true, Err: errors.New("no callback URL: the job names none and its topic has none; register one with PUT /v1/topics/" + j.Topic)}
	} else if secret, err := w.secret(ctx, j.Tenant, t.OwnSecret()); err != nil {
		res = Result{Err: err}
	} else if req, err := w.request(tctx, j, secret, start); err != nil {
		res = Result{Err: err}
	} else {
		req.Read = bodyToRead(j, t)
		res = w.client.Fire(ctx, req)
	}
	// A topic with a circuit breaker keeps its slot until the outcome is
	// recorded (see above): that outcome then shares no round trip.
	slotWaits := t.BreakerFailures > 0
	if !slotWaits {
		called()
	}
	a.Duration, a.Status, a.Response = res.Duration, res.Status, res.Snippet(t.KeptResponse())
	a.ResponseHeaders = res.Header
	o := outcomeOf(res, j)
	if o != kairos.OutcomeDelivered {
		a.Error = failure(res)
	}
	var retryAt time.Time
	if o == kairos.OutcomeRetrying {
		wait := Backoff(j.Attempts-j.ReplayedAfter, j.BackoffInitial, j.BackoffMax, nil)
		if res.HasRetryAfter {
			wait = res.RetryAfter
		}
		retryAt = w.st.Now().Add(wait)
		if j.Expired(retryAt) { // its next attempt could not start: it ends now
			o = kairos.OutcomeExpired
		}
	}
	endAttempt(span, res, o)
	var notices []kairos.Notice
	if n, ok := noticeOf(j, t, a, o, res.Body, w.st.Now()); ok {
		notices = append(notices, n)
	}
	state, err := w.finish(ctx, j, a, o, retryAt, notices...)
	if slotWaits {
		called()
	}
	// the job's logger is made only for a line that is written: a
	// delivery's debug line mostly is not, and With costs an allocation
	// or more an attribute
	log := func() *slog.Logger {
		return w.log.With("tenant", j.Tenant, "topic", j.Topic, "job_id", j.ID, "attempt", j.Attempts)
	}
	switch {
	case err != nil:
		log().Error("record attempt; the job is retried when its lease lapses", "err", err)
	case state == "":
		log().Warn("attempt finished after its lease lapsed; another worker has the job")
	case state == kairos.StateDead:
		log().Warn("job dead", "status", a.Status, "error", a.Error)
	case state == kairos.StateRetrying:
		log().Info("attempt failed; retrying", "status", a.Status, "error", a.Error, "retry_at", retryAt)
	case state == kairos.StateExpired:
		log().Warn("attempt failed; its retry would start after the job's expiry: expired", "status", a.Status, "error", a.Error, "expires_at", j.ExpiresAt)
	case w.log.Enabled(ctx, slog.LevelDebug):
		log().Debug("delivered", "status", a.Status, "duration", a.Duration)
	}
	if w.cfg.OnAttempt != nil {
		w.cfg.OnAttempt(Event{Job: j, Attempt: a, State: state, Lateness: start.Sub(DueAt(j))})
	}
}

// finish records an attempt's outcome, trying again while Redis does not
// answer (a partition, a frozen Redis), for up to finishPatience or until
// ctx ends: an outcome not recorded leaves the job to its lease, and a
// second delivery. Recording an outcome twice is harmless: the store
// applies an attempt's outcome once.
func (w *Worker) finish(ctx context.Context, j kairos.Job, a kairos.Attempt, o kairos.Outcome, retryAt time.Time, notice ...kairos.Notice) (kairos.State, error) {
	give := time.Now().Add(finishPatience)
	wait := 100 * time.Millisecond
	for {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		state, err := w.disp.finish(fctx, j.JobKey, a, o, retryAt, notice...)
		cancel()
		if err == nil || time.Now().Add(wait).After(give) {
			return state, err
		}
		w.log.Debug("record attempt; trying again", "job_id", j.ID, "attempt", j.Attempts, "err", err)
		select {
		case <-ctx.Done():
			return state, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// finishPatience is how long a worker tries to record an outcome: about a
// default lease past the callback (KAIROS_READY_LEASE plus
// KAIROS_LEASE_GRACE); an outcome recorded after its job's lease lapsed is
// stale and changes nothing.
const finishPatience = 20 * time.Second

// noticeURLs are where job j of topic t tells of its delivery and of its
// death: its own URLs, else its topic's. A notification tells no one of
// its own.
func noticeURLs(j kairos.Job, t kairos.Topic) (success, failure string) {
	if _, isNotice := kairos.NoticeOf(j.ID); isNotice {
		return "", ""
	}
	return cmp.Or(j.SuccessURL, t.SuccessURL), cmp.Or(j.FailureURL, t.FailureURL)
}

// bodyToRead is how much of the answer to attempt j.Attempts the worker
// reads (Request.Read): its topic's response_bytes for the log, or the
// most a notification carries when the answer may be one's: any answer
// with a success URL, the last attempt's with a failure URL.
func bodyToRead(j kairos.Job, t kairos.Topic) int {
	success, failure := noticeURLs(j, t)
	if success != "" || (failure != "" && j.AttemptsLeft() <= 0) {
		return kairos.MaxNoticeResponse
	}
	if n := t.KeptResponse(); n > 0 {
		return n
	}
	return NoBody
}

// noticeOf is the notification that outcome o of attempt a at job j of
// topic t files with it, if any: a success notification for a delivery, a
// failure notification for a death or an expiry. body is the answer's
// (Result.Body).
func noticeOf(j kairos.Job, t kairos.Topic, a kairos.Attempt, o kairos.Outcome, body []byte, now time.Time) (kairos.Notice, bool) {
	success, failure := noticeURLs(j, t)
	switch {
	case o == kairos.OutcomeDelivered && success != "":
		return kairos.SuccessNotice(success, j, a, body), true
	case o == kairos.OutcomeDead && failure != "":
		return kairos.FailureNotice(failure, j, a, body, kairos.StateDead, now), true
	case o == kairos.OutcomeExpired && failure != "":
		return kairos.FailureNotice(failure, j, a, body, kairos.StateExpired, now), true
	}
	return kairos.Notice{}, false
}

// outcomeOf is what attempt res at job j came to: delivered on a 2xx;
// dead on a permanent failure or when j has no attempt left; else retried.
func outcomeOf(res Result, j kairos.Job) kairos.Outcome {
	switch {
	case res.OK():
		return kairos.OutcomeDelivered
	case res.Permanent || j.AttemptsLeft() <= 0:
		return kairos.OutcomeDead
	}
	return kairos.OutcomeRetrying
}

// failure says why an attempt that did not deliver failed, for its attempt log.
func failure(res Result) string {
	switch {
	case res.Err != nil:
		return res.Err.Error()
	case res.Status == http.StatusGone:
		return "callback answered 410 Gone: the receiver asked not to be called again, so the job is dead without further attempts"
	}
	return "callback answered " + strconv.Itoa(res.Status) + " " + http.StatusText(res.Status)
}

// request builds the signed callback request of attempt j.Attempts.
func (w *Worker) request(ctx context.Context, j kairos.Job, secret string, now time.Time) (Request, error) {
	h := make(http.Header, len(j.Headers)+10)
	for k, v := range j.Headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", j.ContentType)
	h.Set("User-Agent", "kairos")
	h.Set("Kairos-Job-Id", j.ID)
	h.Set("Kairos-Topic", j.Topic)
	h.Set("Kairos-Attempt", strconv.Itoa(j.Attempts))
	h.Set("Kairos-Scheduled-At", j.RunAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	if sid, ok := kairos.ScheduleOf(j.ID); ok {
		h.Set("Kairos-Schedule-Id", sid) // an occurrence of a recurring schedule
	}
	injectTrace(ctx, h)
	sig := Signature{MsgID: j.UID, DeliveryID: j.UID + "." + strconv.Itoa(j.Attempts), URL: j.CallbackURL, Timestamp: now}
	if err := Sign(h, secret, sig, j.Payload); err != nil {
		return Request{}, fmt.Errorf("sign callback: %w", err)
	}
	return Request{Method: j.Method, URL: j.CallbackURL, Header: h, Body: j.Payload, Timeout: j.Timeout}, nil
}

// secret returns the signing secret of tenant, or of its topic when topic
// is not "" (Queue.SigningSecret), cached for two seconds.
func (w *Worker) secret(ctx context.Context, tenant, topic string) (string, error) {
	key := tenant // a tenant name has no "/"
	if topic != "" {
		key = tenant + "/" + topic
	}
	if v, ok := w.secrets.Load(key); ok {
		c := v.(cachedSecret)
		if time.Since(c.at) < 2*time.Second {
			return c.secret, nil
		}
	}
	s, err := w.st.SigningSecret(ctx, tenant, topic)
	if err != nil {
		return "", err
	}
	w.secrets.Store(key, cachedSecret{secret: s, at: time.Now()})
	return s, nil
}
