package callback

import (
	"context"
	"crypto/x509"
	"log/slog"
	"net/url"
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
	// Hold bounds how long past its due time a popped job is held for a
	// free callback slot before it is given back; keep it below the
	// store's ready lease. Default 5s.
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

// Worker delivers the jobs the scanners push onto the ready lists, along
// the path the package doc tells: its pop loops take and start them
// (pop.go), the flow client paces them (pace.go), the holder holds each
// until its due time (hold.go), each topic's consumer takes as many at
// once as the topic has free callback slots (consume.go) and the flow
// client lets through those its limits allow (gate.go); each is fired in
// a goroutine of its own (fire.go) and its outcome recorded (outcome.go).
// Topics registered while it runs are popped and get a consumer at once
// when a wake message says so, within TopicPoll otherwise.
type Worker struct {
	st     Store
	hold   *holder
	flow   *flowClient
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
	hold := newHolder(st, holdConfig{MaxLate: cfg.Hold, Logger: cfg.Logger})
	flow := newFlowClient(st, hold, cfg.Logger)
	flow.onBreaker = cfg.OnBreaker
	return &Worker{st: st, hold: hold, flow: flow,
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

// FlowFreed tells the worker that flow ("<tenant>/<flow>", the wake
// message's) has a parallelism permit free that is kept for a job waiting
// ahead in wait order: its jobs waiting here for a permit ask again now,
// rather than at their next retry, in case that job is held here.
func (w *Worker) FlowFreed(flow string) {
	w.flow.flowFreed(flow)
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
			w.hold.close(cctx) // what was popped and not started goes back, keeping its place
			cancel()
			w.log.Info("workers stopped")
			return nil
		case <-tick.C:
		case <-w.kick:
		}
		w.sync(ctx, &wg)
	}
}
