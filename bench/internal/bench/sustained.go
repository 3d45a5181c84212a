package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SustainedConfig sizes the sustained scenario.
type SustainedConfig struct {
	Rates []int         // jobs/s of each step, raised in this order; default 1000, 2000, 5000, 10000
	Step  time.Duration // how long each step creates jobs; default 20s
	Lead  time.Duration // how long after its creation each job is due; default 500ms
}

// DefaultSustainedRates are the steps of the sustained scenario.
const DefaultSustainedRates = "1000,2000,5000,10000"

func (c SustainedConfig) withDefaults() SustainedConfig {
	if len(c.Rates) == 0 {
		c.Rates, _ = ParseRates(DefaultSustainedRates)
	}
	if c.Step <= 0 {
		c.Step = 20 * time.Second
	}
	if c.Lead <= 0 {
		c.Lead = 500 * time.Millisecond
	}
	return c
}

// ParseRates reads comma-separated jobs/s, such as "1000,2000,5000",
// into increasing steps.
func ParseRates(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("rate %q: want a whole number of jobs per second above 0", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("name at least one rate")
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// What a step must show to count towards sustained capacity, and what
// makes stepping stop.
const (
	sustainedP99     = 5  // ms: a step's lateness p99 at most this
	sustainedGiveUp  = 50 // ms: a p99 over this ends the stepping
	sustainedMinRate = 0.9
)

// SustainedResult is the sustained scenario: jobs created and due
// continuously, each a short lead after its creation, at rates raised step
// by step.
type SustainedResult struct {
	LeadSeconds float64         `json:"lead_seconds"`
	StepSeconds float64         `json:"step_seconds"`
	Rates       []int           `json:"rates"` // the steps asked for
	Steps       []SustainedStep `json:"steps"` // the steps run
	// Capacity is the highest step rate whose step passed (p99 <= 5 ms,
	// none missing, early or duplicated, none created after its due
	// time); 0 when none passed.
	Capacity int `json:"sustained_capacity_jobs_per_sec"`
	// Stopped says why the steps above the last one run were skipped.
	Stopped string `json:"stopped,omitempty"`
}

// SustainedStep is one rate held for the step's length.
type SustainedStep struct {
	Rate int `json:"rate"`
	Jobs int `json:"jobs"`
	// CreatedPerSec is the jobs created over the time from the step's
	// start to the last create call's answer.
	CreatedPerSec float64 `json:"created_per_sec"`
	// CreatedLate counts jobs whose create call returned after their due time.
	CreatedLate int      `json:"created_late"`
	CreateLagMS float64  `json:"create_lag_max_ms"` // the latest a create call returned after its planned start
	Delivery    Delivery `json:"delivery"`
	// CPU is measured in the steady state: from the first due time to the
	// last create, while jobs are both created and delivered at the rate.
	CPU Usage `json:"cpu"`
	// Life runs from the step's first create call to its settled last
	// delivery: the window of RedisCPUPerJobUS.
	Life             Usage   `json:"cpu_life"`
	RedisCPUPerJobUS float64 `json:"redis_cpu_per_job_us,omitempty"`
	Passed           bool    `json:"passed"`
}

// Sustained runs the sustained scenario.
func (b *Bench) Sustained(ctx context.Context, c SustainedConfig) (*SustainedResult, error) {
	c = c.withDefaults()
	r := &SustainedResult{LeadSeconds: c.Lead.Seconds(), StepSeconds: c.Step.Seconds(), Rates: c.Rates}
	for i, rate := range c.Rates {
		st, err := b.sustainedStep(ctx, rate, c)
		r.Steps = append(r.Steps, st)
		if err != nil {
			return r, fmt.Errorf("sustained: %d jobs/s: %w", rate, err)
		}
		if st.Passed {
			r.Capacity = rate
		}
		d := st.Delivery
		b.progressf("sustained: %d jobs/s: created %.0f/s, lateness p99 %s, redis %.0f%%, process %.0f%%, %s",
			rate, st.CreatedPerSec, fmtMS(d.P99MS), st.CPU.RedisPct, st.CPU.ProcessPct, st.verdict())
		if why := st.giveUp(); why != "" && i < len(c.Rates)-1 {
			r.Stopped = fmt.Sprintf("stopped after %d jobs/s: %s", rate, why)
			break
		}
	}
	return r, nil
}

// sustainedStep creates jobs at rate for the step's length, each due the
// lead after its creation slot, in batch calls of about 50 ms of jobs each,
// paced from several clients; then it waits for the deliveries.
func (b *Bench) sustainedStep(ctx context.Context, rate int, c SustainedConfig) (SustainedStep, error) {
	n := max(1, int(float64(rate)*c.Step.Seconds()))
	size := min(b.cfg.BatchSize, max(1, rate/20))
	st := SustainedStep{Rate: rate, Jobs: n}
	// Job i's creation slot is start + slot(i), on the Redis clock.
	slot := func(i int) time.Duration { return time.Duration(float64(i) * float64(time.Second) / float64(rate)) }
	start := b.now().Add(20 * time.Millisecond).Truncate(time.Millisecond)
	s := b.newSpec("sust", func(i int) int64 { return start.Add(c.Lead + slot(i)).UnixMilli() })
	run := b.rec.Expect(s.run, n)
	stray := b.rec.Stray()
	life := b.mark(ctx)
	var l loadResult
	var err error
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		l, err = b.load(ctx, s, n, size, loadOpts{pace: func(k int) time.Time { return b.local(start.Add(slot(k * size))) }})
	}()
	stop := b.profile(fmt.Sprintf("sustained-%d", rate))
	steadyFrom, steadyTo := start.Add(min(c.Lead, c.Step/2)), start.Add(c.Step)
	sleep(ctx, time.Until(b.local(steadyFrom)))
	steady := b.mark(ctx)
	sleep(ctx, time.Until(b.local(steadyTo)))
	st.CPU = b.usage(ctx, steady)
	<-loaded
	if err == nil {
		b.await(ctx, run, n, time.UnixMilli(s.due(n-1)), 500*time.Millisecond)
	}
	stop()
	st.Life = b.usage(ctx, life)
	st.RedisCPUPerJobUS = st.Life.redisUSPerJob(n)
	st.Delivery = run.Delivery(b.offset, b.rec.Stray()-stray)
	if l.Elapsed > 0 {
		st.CreatedPerSec = float64(l.Created) / l.Elapsed.Seconds()
	}
	st.CreatedLate, st.CreateLagMS = l.Late, nsToMS(int64(l.MaxLag))
	d := st.Delivery
	st.Passed = err == nil && d.P99MS <= sustainedP99 && d.Missing == 0 && d.Early == 0 && d.Duplicated == 0 && st.CreatedLate == 0
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	derr := b.drop(cctx, s, n, func(i int) bool { return run.count[i].Load() > 0 })
	if err != nil {
		return st, err
	}
	if derr != nil {
		return st, fmt.Errorf("clean up: %w", derr)
	}
	return st, ctx.Err()
}

// giveUp says why a step failed too clearly for a higher rate to pass; ""
// when it did not.
func (s SustainedStep) giveUp() string {
	switch d := s.Delivery; {
	case d.P99MS > sustainedGiveUp:
		return fmt.Sprintf("lateness p99 %s is over %d ms", fmtMS(d.P99MS), sustainedGiveUp)
	case s.CreatedPerSec < sustainedMinRate*float64(s.Rate):
		return fmt.Sprintf("jobs were created at only %s/s", fmtInt(int64(s.CreatedPerSec)))
	case d.Missing > 0:
		return fmt.Sprintf("%d jobs never arrived", d.Missing)
	}
	return ""
}

func (s SustainedStep) verdict() string {
	if s.Passed {
		return "passed"
	}
	d := s.Delivery
	var why []string
	if d.P99MS > sustainedP99 {
		why = append(why, fmt.Sprintf("p99 > %d ms", sustainedP99))
	}
	for _, c := range []struct {
		n    int
		what string
	}{{d.Missing, "missing"}, {d.Early, "early"}, {d.Duplicated, "duplicated"}, {s.CreatedLate, "created late"}} {
		if c.n > 0 {
			why = append(why, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return "FAILED: " + strings.Join(why, ", ")
}

// Tables prints the result.
func (r *SustainedResult) Tables() []Table {
	t := Table{
		Title: fmt.Sprintf("sustained: jobs created and due continuously, each due %s after its creation, %gs a step", fmtMS(r.LeadSeconds*1000), r.StepSeconds),
		Head: []string{"jobs/s", "created/s", "p50", "p99", "max", "delivered", "missing", "dup", "early", "created late",
			"redis CPU", "process CPU", "CPU waited", "redis µs/job", "verdict"},
		Left: []int{14},
	}
	pct := func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) + "%" }
	for _, s := range r.Steps {
		d := s.Delivery
		redis, perJob := "n/a", "n/a"
		if s.CPU.Redis {
			redis, perJob = pct(s.CPU.RedisPct), f2(s.RedisCPUPerJobUS)
		}
		t.Rows = append(t.Rows, []string{fmtInt(int64(s.Rate)), fmtInt(int64(s.CreatedPerSec)), fmtMS(d.P50MS), fmtMS(d.P99MS), fmtMS(d.MaxMS),
			fmtInt(int64(d.Delivered)) + " / " + fmtInt(int64(d.Jobs)), fmtInt(int64(d.Missing)), fmtInt(int64(d.Duplicated)), fmtInt(int64(d.Early)),
			fmtInt(int64(s.CreatedLate)), redis, pct(s.CPU.ProcessPct), pct(s.CPU.StallPct), perJob, s.verdict()})
	}
	capacity := "none of the steps passed"
	if r.Capacity > 0 {
		capacity = fmtInt(int64(r.Capacity)) + " jobs/s"
	}
	t.Notes = []string{
		fmt.Sprintf("SUSTAINED CAPACITY: %s: the highest step with lateness p99 <= %d ms, no job missing, early or duplicated, and none created after its due time", capacity, sustainedP99),
		"jobs are created in batch calls of 50 ms of jobs each, paced, from several clients; lateness = arrival at the receiver minus due time",
		"redis CPU, process CPU (kairos and, self-started, the tool) and CPU waited (some task on this machine waited for a CPU): % of one core, from the first due time to the last create, while jobs are created and delivered at the rate",
		"redis µs/job = growth of INFO used_cpu_user+used_cpu_sys from the step's first create call until its last delivery has settled / the step's jobs (their whole life, background included)",
	}
	if r.Stopped != "" {
		t.Notes = append(t.Notes, r.Stopped+"; higher steps not run")
	}
	return []Table{t}
}
