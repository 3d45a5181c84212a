// Package metrics exposes kairos's Prometheus metrics: job outcomes and
// timings from the workers, and Redis-side gauges read at scrape time.
package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// Metrics holds kairos's collectors on a registry of its own.
type Metrics struct {
	reg       *prometheus.Registry
	created   *prometheus.CounterVec
	delivered *prometheus.CounterVec
	failed    *prometheus.CounterVec
	dead      *prometheus.CounterVec
	gone      *prometheus.CounterVec
	occFired  *prometheus.CounterVec
	occDone   *prometheus.CounterVec
	occDead   *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	lateness  *prometheus.HistogramVec
	redisErrs prometheus.Counter
	expired   *prometheus.CounterVec
	occSkip   *prometheus.CounterVec
	breaker   *prometheus.CounterVec
}

// Gauges are read from Redis and the process at scrape time.
type Gauges struct {
	Store     *rdb.Store
	LocksHeld func() int // nil when this process runs no scanner
	InFlight  func() int64
	// Pools are the process's Redis clients by pool name ("main",
	// "blocking"): their PoolStats, read for kairos_redis_connections.
	Pools map[string]func() *redis.PoolStats
}

// Connections returns the connections a go-redis client has open: its
// pool's, its pipeline pool's and its pub/sub ones (go-redis counts the
// last on a single Redis only, not on a cluster).
func Connections(s *redis.PoolStats) int {
	n := int(s.TotalConns) + int(s.PubSubStats.Active)
	if s.PipelineStats != nil {
		n += int(s.PipelineStats.TotalConns)
	}
	return n
}

// New registers the metrics. Call Watch to add the Redis-side gauges.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		created: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kairos_jobs_created_total",
			Help: "Jobs created or replaced through the API."}, []string{"topic"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kairos_jobs_delivered_total",
			Help: "Jobs whose callback answered 2xx."}, []string{"topic"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kairos_attempts_failed_total",
			Help: "Callback attempts that failed (non-2xx, timeout, connection error, refused target)."}, []string{"topic"}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kairos_jobs_dead_total",
			Help: "Jobs that failed their last attempt and went to the dead letters."}, []string{"topic"}),
		gone: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kairos_gone_total",
			Help: "Jobs that went to the dead letters at once because their receiver answered 410 Gone."}, []string{"topic"}),
		occFired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kairos_occurrences_fired_total",
			Help: "Schedule occurrences whose first attempt this process made (a replayed dead one fires again)."}, []string{"topic"}),
		occDone: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kairos_occurrences_delivered_total",
			Help: "Schedule occurrences whose callback answered 2xx."}, []string{"topic"}),
		occDead: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kairos_occurrences_dead_total",
			Help: "Schedule occurrences that failed their last attempt and went to the dead letters."}, []string{"topic"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kairos_attempt_duration_seconds",
			Help:    "Time from sending a callback to its response headers or error.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"topic"}),
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kairos_lateness_seconds",
			Help:    "First attempt start minus the scheduled time.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30}}, []string{"topic"}),
		redisErrs: prometheus.NewCounter(prometheus.CounterOpts{Name: "kairos_redis_errors_total",
			Help: "Redis commands that failed (not counting empty replies)."}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kairos_jobs_expired_total",
			Help: "Jobs that ended expired: their expires_at came before their next attempt could start."}, []string{"topic"}),
		occSkip: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kairos_occurrences_skipped_total",
			Help: "Schedule instants that did not fire because the previous occurrence was still active or retrying (overlap skip, or buffer_one with one already waiting), counted by the claims of this process's scanner."}, []string{"topic"}),
		breaker: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kairos_breaker_transitions_total",
			Help: "Circuit breaker moves that this process's workers caused, by the state moved to: open (failures in a row reached the topic's threshold, or the probe failed) or closed (a delivery)."}, []string{"topic", "state"}),
	}
	reg.MustRegister(m.created, m.delivered, m.failed, m.dead, m.gone, m.occFired, m.occDone, m.occDead,
		m.duration, m.lateness, m.redisErrs, m.expired, m.occSkip, m.breaker,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Watch adds gauges read from g at every scrape. Call it once.
func (m *Metrics) Watch(g Gauges) { m.reg.MustRegister(&redisCollector{g: g}) }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Created counts a job created or replaced in a topic.
func (m *Metrics) Created(tenant, topic string) {
	m.created.WithLabelValues(tenant + "/" + topic).Inc()
}

// Attempt records a finished callback attempt. An attempt of a schedule's
// occurrence (kairos.ScheduleOf) also counts it: fired when it was its
// first attempt, whatever the outcome (so a first attempt whose lease
// lapsed counts, as the claim that handed it out counted it in Redis),
// and delivered or dead when it ended so.
func (m *Metrics) Attempt(e callback.Event) {
	topic := e.Job.Tenant + "/" + e.Job.Topic
	if e.Attempt.Event == kairos.AttemptExpired { // no attempt was made: an expiry only
		if e.State == kairos.StateExpired {
			m.expired.WithLabelValues(topic).Inc()
		}
		return
	}
	m.duration.WithLabelValues(topic).Observe(e.Attempt.Duration.Seconds())
	if e.Attempt.N == 1 {
		m.lateness.WithLabelValues(topic).Observe(max(e.Lateness, 0).Seconds())
	}
	_, occurrence := kairos.ScheduleOf(e.Job.ID)
	if occurrence && e.Attempt.N == 1 {
		m.occFired.WithLabelValues(topic).Inc()
	}
	switch e.State {
	case kairos.StateDelivered:
		m.delivered.WithLabelValues(topic).Inc()
		if occurrence {
			m.occDone.WithLabelValues(topic).Inc()
		}
	case kairos.StateRetrying:
		m.failed.WithLabelValues(topic).Inc()
	case kairos.StateExpired:
		m.failed.WithLabelValues(topic).Inc()
		m.expired.WithLabelValues(topic).Inc()
	case kairos.StateDead:
		m.failed.WithLabelValues(topic).Inc()
		m.dead.WithLabelValues(topic).Inc()
		if e.Attempt.Status == http.StatusGone {
			m.gone.WithLabelValues(topic).Inc()
		}
		if occurrence {
			m.occDead.WithLabelValues(topic).Inc()
		}
	}
}

// Skipped counts n instants of a tenant's topic's schedules that their
// overlap rule did not fire (scanner.Config.SkippedFunc).
func (m *Metrics) Skipped(tenant, topic string, n int) {
	m.occSkip.WithLabelValues(tenant + "/" + topic).Add(float64(n))
}

// Breaker counts a move of a tenant's topic's circuit breaker to b.State
// (callback.WorkerConfig.OnBreaker).
func (m *Metrics) Breaker(tenant, topic string, b kairos.Breaker) {
	m.breaker.WithLabelValues(tenant+"/"+topic, b.State).Inc()
}

// Hook returns a go-redis hook that counts failed commands.
func (m *Metrics) Hook() redis.Hook { return errorHook{m.redisErrs} }

type errorHook struct{ c prometheus.Counter }

func (h errorHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			h.c.Inc()
		}
		return conn, err
	}
}

func (h errorHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if failed(cmd, err) {
			h.c.Inc()
		}
		return err
	}
}

func (h errorHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if failed(c, c.Err()) {
				h.c.Inc()
			}
		}
		return err
	}
}

// failed reports whether cmd's error is a real failure. Not failures: an
// empty reply (redis.Nil); NOSCRIPT, which Script.Run answers with EVAL;
// a command that kairos itself cancelled (a consumer stopped, shutdown);
// the optional parts of go-redis's connection handshake (CLIENT SETINFO,
// CLIENT MAINT_NOTIFICATIONS), which servers before Redis 7.2 refuse and
// go-redis ignores; and the probes of commands that a server before Redis
// 7.0 (or the embedded one) does not know: the FUNCTION LOAD after which
// the scripts run with EVALSHA, and the first BLMPOP or LMPOP, after which
// the workers pop with BRPOP and RPOP.
func failed(cmd redis.Cmder, err error) bool {
	switch {
	case err == nil, errors.Is(err, redis.Nil), redis.HasErrorPrefix(err, "NOSCRIPT"),
		errors.Is(err, context.Canceled), errors.Is(err, redis.ErrClosed):
		return false
	}
	return !optionalHandshake(cmd) && !commandProbe(cmd, err)
}

// commandProbe reports whether cmd is one that kairos tries and falls back
// from on a server that has no such command: FUNCTION (rdb's loadScripts
// then uses EVALSHA), BLMPOP and LMPOP (rdb's Pop then uses BRPOP and RPOP).
func commandProbe(cmd redis.Cmder, err error) bool {
	switch strings.ToLower(cmd.Name()) {
	case "function", "blmpop", "lmpop":
	default:
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "unknown command") || strings.Contains(msg, "unknown subcommand")
}

func optionalHandshake(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 || !strings.EqualFold(cmd.Name(), "client") {
		return false
	}
	sub, _ := args[1].(string)
	return strings.EqualFold(sub, "setinfo") || strings.EqualFold(sub, "maint_notifications")
}

// redisCollector reads the Delay Bucket depths (one pipeline of an HLEN a
// shard) and the process's own gauges at scrape time. A scrape reads
// nothing per topic: how many topics there are, whatever a tenant does,
// does not change what it costs Redis. A topic's ready jobs, pause and
// breaker are in GET /v1/stats, behind a token.
type redisCollector struct{ g Gauges }

var (
	bucketDesc   = prometheus.NewDesc("kairos_bucket_depth", "Members of a Delay Bucket shard: pending jobs and leases.", []string{"shard"}, nil)
	locksDesc    = prometheus.NewDesc("kairos_scanner_locks_held", "Delay Bucket shard locks this process holds.", nil, nil)
	inflightDesc = prometheus.NewDesc("kairos_callbacks_in_flight", "Callbacks this process is firing now.", nil, nil)
	upDesc       = prometheus.NewDesc("kairos_redis_up", "1 when the last scrape could read Redis.", nil, nil)
	connsDesc    = prometheus.NewDesc("kairos_redis_connections", "Redis connections this process has open, by pool (main includes pub/sub and pipelines).", []string{"pool"}, nil)
)

func (c *redisCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- bucketDesc
	ch <- locksDesc
	ch <- inflightDesc
	ch <- upDesc
	ch <- connsDesc
}

func (c *redisCollector) Collect(ch chan<- prometheus.Metric) {
	if c.g.LocksHeld != nil {
		ch <- prometheus.MustNewConstMetric(locksDesc, prometheus.GaugeValue, float64(c.g.LocksHeld()))
	}
	if c.g.InFlight != nil {
		ch <- prometheus.MustNewConstMetric(inflightDesc, prometheus.GaugeValue, float64(c.g.InFlight()))
	}
	for name, stats := range c.g.Pools {
		ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(Connections(stats())), name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	up := 1.0
	depths, err := c.g.Store.BucketDepths(ctx)
	if err != nil {
		up = 0
	}
	for sh, d := range depths {
		ch <- prometheus.MustNewConstMetric(bucketDesc, prometheus.GaugeValue, float64(d), strconv.Itoa(sh))
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, up)
}
