package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/client"
)

// SchedulesConfig sizes the schedules scenario: a precision phase of many
// schedules firing often, then a scale phase of more firing rarely.
type SchedulesConfig struct {
	Schedules      int           // precision phase: schedules; default 10,000; <0 skips the phase
	Every          time.Duration // their interval; default 1s
	Window         time.Duration // how long they fire; default 20s
	ScaleSchedules int           // scale phase: schedules; default 100,000; <0 skips the phase
	ScaleEvery     time.Duration // default 1m
	ScaleWindow    time.Duration // default 2m
	// Aligned makes every schedule of a phase fire at the same instants,
	// as a cron pattern such as "* * * * * *" does: a burst each interval.
	// By default their instants are spread evenly over the interval.
	Aligned bool
	// OneShot runs one-shot jobs due uniformly at each phase's rate beside
	// it (over the same window), to compare their cost and lateness: once
	// created one per POST, once by batches.
	OneShot bool
}

func (c SchedulesConfig) withDefaults() SchedulesConfig {
	if c.Schedules == 0 {
		c.Schedules = 10_000
	}
	if c.Every <= 0 {
		c.Every = time.Second
	}
	if c.Window <= 0 {
		c.Window = 20 * time.Second
	}
	if c.ScaleSchedules == 0 {
		c.ScaleSchedules = 100_000
	}
	if c.ScaleEvery <= 0 {
		c.ScaleEvery = time.Minute
	}
	if c.ScaleWindow <= 0 {
		c.ScaleWindow = 2 * time.Minute
	}
	return c
}

// SchedulesResult is the schedules scenario.
type SchedulesResult struct {
	Phases []*SchedulePhase `json:"phases"`
}

// SchedulePhase is one phase: schedules created through the API, each
// ending after a number of occurrences, then their occurrences received.
type SchedulePhase struct {
	Name          string  `json:"name"` // precision or scale
	Schedules     int     `json:"schedules"`
	EverySeconds  float64 `json:"every_seconds"`
	Aligned       bool    `json:"aligned"`
	Each          int     `json:"occurrences_each"`
	Occurrences   int     `json:"occurrences"`
	WindowSeconds float64 `json:"window_seconds"`
	PerSec        float64 `json:"due_per_sec"`

	Created       int     `json:"created"`
	CreateSeconds float64 `json:"create_seconds"`
	CreatedPerSec float64 `json:"created_per_sec"`
	CreateP50MS   float64 `json:"create_latency_p50_ms"`
	CreateP99MS   float64 `json:"create_latency_p99_ms"`
	// CreatedLate counts the schedules created after their first instant.
	CreatedLate int `json:"created_late"`
	// MemoryPerSchedule is Redis's used_memory growth over the creates
	// divided by the schedules (0 when unknown).
	MemoryPerSchedule     float64 `json:"memory_per_schedule_bytes,omitempty"`
	CreateCPU             Usage   `json:"cpu_create"`
	RedisCPUPerScheduleUS float64 `json:"redis_cpu_per_schedule_created_us,omitempty"`
	LeadSeconds           float64 `json:"lead_seconds"`
	AheadSeconds          float64 `json:"created_ahead_seconds"`
	// Waiting is the CPU from the last create to the first instant, when
	// that lasted a second or more: the schedules pending, nothing due.
	Waiting *Usage `json:"cpu_waiting,omitempty"`

	Delivery Delivery `json:"delivery"`
	// Fired counts the occurrences fired while CPU was measured: the
	// phase's, and those of the instant after it that fired meanwhile.
	Fired           int     `json:"fired_in_window"`
	DeliveredPerSec float64 `json:"delivered_per_sec"`
	// CPU is from just before the first instant until the last occurrence
	// settled; RedisCPUPerOccurrenceUS its Redis time per occurrence fired.
	CPU                     Usage   `json:"cpu"`
	RedisCPUPerOccurrenceUS float64 `json:"redis_cpu_per_occurrence_us,omitempty"`
	// OneShots are the precision scenario at the phase's rate, when asked:
	// jobs created one per POST, then by batches (BatchSize says which).
	OneShots []*PrecisionResult `json:"one_shot,omitempty"`
	Checks   []Check            `json:"checks"`
}

// metricOccurrenceCPU names the check of Redis CPU per occurrence against
// a one-shot job's (issue 14).
const metricOccurrenceCPU = "Redis CPU per occurrence"

// Schedules runs the schedules scenario and removes every schedule it made.
func (b *Bench) Schedules(ctx context.Context, c SchedulesConfig) (*SchedulesResult, error) {
	c = c.withDefaults()
	r := &SchedulesResult{}
	if err := b.probeScheduleRate(ctx); err != nil {
		return r, fmt.Errorf("schedules: %w", err)
	}
	for _, ph := range []struct {
		name          string
		n             int
		every, window time.Duration
	}{{"precision", c.Schedules, c.Every, c.Window}, {"scale", c.ScaleSchedules, c.ScaleEvery, c.ScaleWindow}} {
		if ph.n < 0 {
			continue
		}
		p, err := b.schedulePhase(ctx, ph.name, ph.n, ph.every, ph.window, c.Aligned)
		r.Phases = append(r.Phases, p)
		if err != nil {
			p.check()
			return r, fmt.Errorf("schedules %s: %w", ph.name, err)
		}
		if c.OneShot {
			// over the phase's own window: a window longer than a lease
			// (due + timeout + lease margin, about 45 s) also pays for the
			// lease entries of the jobs fired early in it, as the phase does
			over := time.Duration(p.Each) * ph.every
			jobs := int(math.Round(p.PerSec * over.Seconds()))
			sizes := []int{1}
			if b.cfg.BatchSize > 1 {
				sizes = append(sizes, b.cfg.BatchSize)
			}
			for _, size := range sizes {
				b.progressf("schedules %s: one-shot jobs at the same rate: %s over %v, created %s", ph.name, fmtInt(int64(jobs)), over, createdBy(size))
				one, err := b.precision(ctx, jobs, over, precisionRun{size: size, profile: fmt.Sprintf("schedules-%s-oneshot-%d", ph.name, size)})
				p.OneShots = append(p.OneShots, one)
				if err != nil {
					p.check()
					return r, fmt.Errorf("schedules %s, one-shot jobs created %s: %w", ph.name, createdBy(size), err)
				}
			}
		}
		p.check()
	}
	if len(r.Phases) == 0 {
		return r, errors.New("schedules: both phases skipped")
	}
	return r, nil
}

// occurrences numbers the occurrences of a phase: schedule i (id
// "<run>-<i>") fires at startMS(i) + k*everyMS for k < each, unix ms on
// the Redis clock; occurrence k of schedule i is number i*each+k.
type occurrences struct {
	run           string
	n, each       int
	t0MS, everyMS int64
	aligned       bool
}

// startMS is schedule i's first instant: t0, or, spread, its share of the
// interval after t0.
func (o occurrences) startMS(i int) int64 {
	if o.aligned {
		return o.t0MS
	}
	return o.t0MS + o.everyMS*int64(i)/int64(o.n)
}

// lastMS is the last instant of the phase.
func (o occurrences) lastMS() int64 { return o.startMS(o.n-1) + int64(o.each-1)*o.everyMS }

// endMS is schedule i's end_at: one instant after the last the phase
// expects, so that every occurrence the phase measures files the next
// one, as a schedule that goes on does.
func (o occurrences) endMS(i int) int64 { return o.startMS(i) + int64(o.each)*o.everyMS }

// slot maps an occurrence of schedule i with job id "<schedule
// id>@<unix ms>" to its number and instant, or to Beyond for the instant
// after the phase's (endMS); false for one the phase does not expect:
// another schedule's id, an instant off the pattern or past end_at.
func (o occurrences) slot(i int, jobID string) (int, int64, bool) {
	sid, at, ok := kairos.ParseOccurrence(jobID)
	if !ok || i < 0 || i >= o.n || sid != o.run+"-"+strconv.Itoa(i) {
		return 0, 0, false
	}
	ms := at.UnixMilli()
	d := ms - o.startMS(i)
	if d < 0 || d%o.everyMS != 0 || d/o.everyMS > int64(o.each) {
		return 0, 0, false
	}
	if d/o.everyMS == int64(o.each) {
		return Beyond, ms, true
	}
	return i*o.each + int(d/o.everyMS), ms, true
}

// schedulePhase creates n schedules every interval, each firing for the
// window and then ending, receives their occurrences and removes them.
func (b *Bench) schedulePhase(ctx context.Context, name string, n int, every, window time.Duration, aligned bool) (*SchedulePhase, error) {
	every = every.Truncate(time.Millisecond)
	each := max(int(window/every), 1)
	p := &SchedulePhase{Name: name, Schedules: n, EverySeconds: every.Seconds(), Aligned: aligned, Each: each, Occurrences: n * each,
		WindowSeconds: (time.Duration(each) * every).Seconds(), PerSec: float64(n) / every.Seconds()}
	lead := b.scheduleLead(n)
	t0 := b.now().Add(lead).Truncate(time.Millisecond)
	if aligned { // on the interval's boundaries, as a cron pattern fires
		t0 = t0.Truncate(every).Add(every)
	}
	p.LeadSeconds = t0.Sub(b.now()).Round(time.Millisecond).Seconds()
	o := occurrences{n: n, each: each, t0MS: t0.UnixMilli(), everyMS: every.Milliseconds(), aligned: aligned}
	s := b.newSpec("sched-"+name, func(i int) int64 { return o.startMS(i) })
	o.run = s.run
	run := b.rec.ExpectOccurrences(s.run, n*each, o.slot)
	stray := b.rec.Stray()
	put := func(ctx context.Context, i, _ int) error {
		start := o.startMS(i)
		_, err := b.api.PutSchedule(ctx, b.topic, s.id(i), client.ScheduleRequest{Every: client.Duration(every),
			StartAt: time.UnixMilli(start), EndAt: time.UnixMilli(o.endMS(i)), Payload: appendPayload(nil, s.run, i, 0)})
		return err
	}

	b.settleMemory(ctx)
	mem0, memOK := b.usedMemory(ctx)
	mark := b.mark(ctx)
	stop := b.profile("schedules-" + name + "-create")
	l, err := b.load(ctx, s, n, 1, loadOpts{send: put, progress: func(k int, d time.Duration) {
		b.progressf("schedules %s: created %s of %s in %v", name, fmtInt(int64(k)), fmtInt(int64(n)), d.Round(time.Second))
	}})
	stop()
	p.CreateCPU = b.usage(ctx, mark)
	p.Created, p.CreateSeconds, p.CreatedPerSec, p.CreatedLate = l.Created, l.Elapsed.Seconds(), l.rate(), l.Late
	p.RedisCPUPerScheduleUS = p.CreateCPU.redisUSPerJob(l.Created)
	if q := durQuantiles(l.Lat, 0.5, 0.99); len(l.Lat) > 0 {
		p.CreateP50MS, p.CreateP99MS = q[0], q[1]
	}
	if mem1, ok := b.usedMemory(ctx); ok && memOK && l.Created > 0 {
		p.MemoryPerSchedule = float64(mem1-mem0) / float64(l.Created)
	}
	if l.rate() > 0 {
		b.schedRate = l.rate()
	}
	ahead := t0.Sub(b.now())
	p.AheadSeconds = ahead.Round(time.Millisecond).Seconds()
	b.progressf("schedules %s: %s schedules created in %.1fs (%s/s), %.1fs before the first instant",
		name, fmtInt(int64(l.Created)), l.Elapsed.Seconds(), fmtInt(int64(l.rate())), ahead.Seconds())

	if err == nil {
		waiting := b.mark(ctx)
		sleep(ctx, time.Until(b.local(t0))-50*time.Millisecond)
		if u := b.usage(ctx, waiting); u.Seconds >= 1 {
			p.Waiting = &u
		}
		mark := b.mark(ctx)
		stop := b.profile("schedules-" + name)
		b.await(ctx, run, n*each, time.UnixMilli(o.lastMS()), 500*time.Millisecond)
		stop()
		p.CPU = b.usage(ctx, mark)
		p.Delivery = run.Delivery(b.offset, b.rec.Stray()-stray) // its Beyond as the measure ended
		p.Fired = n*each + p.Delivery.Beyond
		p.RedisCPUPerOccurrenceUS = p.CPU.redisUSPerJob(p.Fired)
		if p.Delivery.LastMS > 0 {
			p.DeliveredPerSec = float64(p.Delivery.Delivered) / (p.Delivery.LastMS / 1000)
		}
		b.progressf("schedules %s: %s of %s occurrences delivered", name, fmtInt(int64(p.Delivery.Delivered)), fmtInt(int64(n*each)))
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	derr := b.dropSchedules(cctx, s, n)
	// occurrences of the instant after the phase's that a claim took
	// before the drop still fire: they arrive while the phase is the
	// receiver's run, not as stray hits of the next one
	for prev := -1; prev != run.Beyond() && ctx.Err() == nil; {
		prev = run.Beyond()
		sleep(ctx, time.Second)
	}
	if err != nil {
		return p, err
	}
	if derr != nil {
		return p, fmt.Errorf("clean up: %w", derr)
	}
	return p, ctx.Err()
}

// check sets the phase's checks: the precision scenario's lateness
// targets, no occurrence early, missing or doubled, and Redis CPU per
// occurrence at most a one-shot job's over its life (issue 14), when one-
// shot jobs created one per POST ran: a job as a client makes one, and as
// a scheduler outside kairos would make each occurrence.
func (p *SchedulePhase) check() {
	d := p.Delivery
	p.Checks = []Check{atMost("lateness p99", d.P99MS, 5, " ms"), atMost("lateness max", d.MaxMS, 25, " ms")}
	_, cs := deliveryRows(d)
	p.Checks = append(p.Checks, cs...)
	if one := p.oneShot(1); one != nil && p.CPU.Redis && one.RedisCPUPerJobUS > 0 {
		limit := math.Round(one.RedisCPUPerJobUS*10) / 10
		p.Checks = append(p.Checks, atMost(metricOccurrenceCPU, p.RedisCPUPerOccurrenceUS, limit, " µs"))
	}
}

// oneShot returns the one-shot run whose jobs were created by calls of
// size jobs, or nil.
func (p *SchedulePhase) oneShot(size int) *PrecisionResult {
	for _, o := range p.OneShots {
		if o != nil && o.BatchSize == size {
			return o
		}
	}
	return nil
}

// createdBy says how jobs were created, by calls of size jobs.
func createdBy(size int) string {
	if size <= 1 {
		return "one per POST"
	}
	return "by batches of " + fmtInt(int64(size))
}

// probeScheduleRate times a few schedule creates, for the lead of the
// first phase, and removes them.
func (b *Bench) probeScheduleRate(ctx context.Context) error {
	const n = 200
	far := b.now().Add(24 * time.Hour).UnixMilli()
	s := b.newSpec("sprobe", func(int) int64 { return far })
	l, err := b.load(ctx, s, n, 1, loadOpts{send: func(ctx context.Context, i, _ int) error {
		_, err := b.api.PutSchedule(ctx, b.topic, s.id(i), client.ScheduleRequest{Every: client.Duration(time.Hour), StartAt: time.UnixMilli(far)})
		return err
	}})
	b.schedRate = l.rate()
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if derr := b.dropSchedules(cctx, s, n); err == nil && derr != nil {
		err = fmt.Errorf("clean up: %w", derr)
	}
	return err
}

// scheduleLead is how far ahead of its first instant a phase of n
// schedules starts being created: --lead, or the time the last measured
// create rate needs, with a margin.
func (b *Bench) scheduleLead(n int) time.Duration {
	if b.cfg.Lead > 0 {
		return b.cfg.Lead
	}
	rate := max(b.schedRate, 100)
	return 2*time.Second + time.Duration(1.3*float64(n)/rate*float64(time.Second))
}

// dropSchedules removes schedules 0..n-1 of s and their pending
// occurrences: at once when the target can, else one by one through the API.
func (b *Bench) dropSchedules(ctx context.Context, s spec, n int) error {
	if b.t.DropJobs != nil {
		if _, err := b.t.DropJobs(ctx); err != nil {
			return err
		}
		b.settleMemory(ctx)
		return nil
	}
	err := b.forEach(ctx, n, func(ctx context.Context, i int) error {
		if err := b.api.DeleteSchedule(ctx, b.topic, s.id(i)); err != nil && !client.IsNotFound(err) {
			return err
		}
		return nil
	})
	b.settleMemory(ctx)
	return err
}
