package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kairos-sh/kairos/client"
)

// FlowConfig sizes the flow scenario.
type FlowConfig struct {
	Rate        int           // the rate phase's limit a second; default 500
	Parallelism int           // the parallelism phase's limit; default 10
	Hold        time.Duration // how long the receiver holds each request then; default 100ms
}

func (c FlowConfig) withDefaults() FlowConfig {
	if c.Rate <= 0 {
		c.Rate = 500
	}
	if c.Parallelism <= 0 {
		c.Parallelism = 10
	}
	if c.Hold <= 0 {
		c.Hold = 100 * time.Millisecond
	}
	return c
}

// FlowResult is the flow scenario: a burst with no limits, the same burst
// under a rate limit, and one under a parallelism limit with a slow receiver.
type FlowResult struct {
	Jobs int `json:"jobs"` // of the unlimited and the rate phases: 10 s at the rate
	// Baseline: the burst with no limits, for what flow control adds.
	BaselineRedisCPUPerJobUS float64 `json:"baseline_redis_cpu_per_job_us"`

	Rate                 int      `json:"rate_limit_per_sec"`
	RatePerSec           float64  `json:"rate_achieved_per_sec"`
	RateBusiestSecond    int      `json:"rate_busiest_second"`
	RateDelivery         Delivery `json:"rate_delivery"`
	RateRedisCPUPerJobUS float64  `json:"rate_redis_cpu_per_job_us"`

	Parallelism        int      `json:"parallelism"`
	HoldMS             float64  `json:"receiver_hold_ms"`
	ParallelJobs       int      `json:"parallel_jobs"`
	MostInFlight       int64    `json:"most_in_flight"`
	ParallelPerSec     float64  `json:"parallel_achieved_per_sec"`
	ParallelDelivery   Delivery `json:"parallel_delivery"`
	ParallelRedisCPUUS float64  `json:"parallel_redis_cpu_per_job_us"`
	Checks             []Check  `json:"checks"`
}

// Flow runs the flow scenario. It leaves the bench's topic without limits.
func (b *Bench) Flow(ctx context.Context, c FlowConfig) (*FlowResult, error) {
	c = c.withDefaults()
	n := c.Rate * 10
	r := &FlowResult{Jobs: n, Rate: c.Rate, Parallelism: c.Parallelism, HoldMS: float64(c.Hold) / float64(time.Millisecond)}
	defer func() {
		b.rec.SetHold(0)
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		b.putTopic(cctx, b.rec.URL)
	}()
	at0 := func(int) time.Duration { return 0 }

	b.progressf("flow: %s jobs due at one instant, no limits", fmtInt(int64(n)))
	f, err := b.fire(ctx, "flow-base", n, 0, at0, 0, 500*time.Millisecond, "flow-base", nil)
	if err != nil {
		return r, fmt.Errorf("flow, no limits: %w", err)
	}
	r.BaselineRedisCPUPerJobUS = f.life.redisUSPerJob(n)

	b.progressf("flow: %s jobs due at one instant, at most %d a second", fmtInt(int64(n)), c.Rate)
	if err := b.putTopicWith(ctx, client.TopicRequest{CallbackURL: b.rec.URL, Rate: &client.Rate{Limit: c.Rate, Period: client.Duration(time.Second)}}); err != nil {
		return r, fmt.Errorf("flow: set the rate: %w", err)
	}
	f, err = b.fire(ctx, "flow-rate", n, 0, at0, time.Duration(n/c.Rate)*time.Second, 500*time.Millisecond, "flow-rate", nil)
	if err != nil {
		return r, fmt.Errorf("flow, rate: %w", err)
	}
	r.RateDelivery, r.RateRedisCPUPerJobUS = f.delivery, f.life.redisUSPerJob(n)
	r.RateBusiestSecond, r.RatePerSec = busiest(f.run)

	pn := c.Parallelism * int(5*time.Second/c.Hold) // about 5 s at the most the limit allows
	b.progressf("flow: %s jobs due at one instant, at most %d in flight, each held %v", fmtInt(int64(pn)), c.Parallelism, c.Hold)
	if err := b.putTopicWith(ctx, client.TopicRequest{CallbackURL: b.rec.URL, Parallelism: c.Parallelism}); err != nil {
		return r, fmt.Errorf("flow: set the parallelism: %w", err)
	}
	b.rec.SetHold(c.Hold)
	f, err = b.fire(ctx, "flow-par", pn, 0, at0, time.Duration(pn/c.Parallelism)*c.Hold, 500*time.Millisecond, "flow-par", nil)
	if err != nil {
		return r, fmt.Errorf("flow, parallelism: %w", err)
	}
	r.ParallelJobs, r.MostInFlight, r.ParallelDelivery = pn, b.rec.MostInFlight(), f.delivery
	r.ParallelRedisCPUUS = f.life.redisUSPerJob(pn)
	_, r.ParallelPerSec = busiest(f.run)

	r.Checks = []Check{atMost("busiest second (rate)", float64(r.RateBusiestSecond), float64(c.Rate), ""),
		atMost("most in flight (parallelism)", float64(r.MostInFlight), float64(c.Parallelism), "")}
	_, cs := deliveryRows(r.RateDelivery)
	r.Checks = append(r.Checks, cs...)
	_, cs = deliveryRows(r.ParallelDelivery)
	r.Checks = append(r.Checks, cs...)
	return r, nil
}

// busiest returns the most first deliveries of run in any 1-second window
// at the receiver, and the deliveries a second from the first to the last.
func busiest(run *Arrivals) (int, float64) {
	var at []int64
	for i := range run.first {
		if v := run.first[i].Load(); v != 0 {
			at = append(at, v)
		}
	}
	if len(at) < 2 {
		return len(at), 0
	}
	slices.Sort(at)
	most, j := 0, 0
	for i := range at {
		for at[i]-at[j] >= int64(time.Second) {
			j++
		}
		most = max(most, i-j+1)
	}
	return most, float64(len(at)-1) / (float64(at[len(at)-1]-at[0]) / 1e9)
}

// Tables prints the result.
func (r *FlowResult) Tables() []Table {
	t := Table{Title: "flow: rate and parallelism limits, across every kairos process sharing the Redis",
		Head: []string{"metric", "value", "target", "verdict"}, Left: []int{2, 3}}
	check := func(i int) Check {
		if i < len(r.Checks) {
			return r.Checks[i]
		}
		return Check{}
	}
	t.Rows = [][]string{
		{fmt.Sprintf("rate %d/s, %s jobs due at one instant: achieved", r.Rate, fmtInt(int64(r.Jobs))), fmtRate(r.RatePerSec, "/s"), "", ""},
		checkRow("busiest 1 s window at the receiver", fmtInt(int64(r.RateBusiestSecond)), check(0)),
		{"delivered / missing / duplicated", fmt.Sprintf("%d / %d / %d", r.RateDelivery.Delivered, r.RateDelivery.Missing, r.RateDelivery.Duplicated), "", ""},
		{"Redis CPU per job life: no limits / rate limit (added)", fmt.Sprintf("%.1f / %.1f µs (%+.1f)", r.BaselineRedisCPUPerJobUS, r.RateRedisCPUPerJobUS,
			r.RateRedisCPUPerJobUS-r.BaselineRedisCPUPerJobUS), "", ""},
		{fmt.Sprintf("parallelism %d, receiver holds %v: achieved", r.Parallelism, time.Duration(r.HoldMS*float64(time.Millisecond))),
			fmtRate(r.ParallelPerSec, "/s") + fmt.Sprintf(" (at most %.0f/s)", float64(r.Parallelism)*1000/r.HoldMS), "", ""},
		checkRow("most callbacks in flight at once", fmtInt(r.MostInFlight), check(1)),
		{"delivered / missing / duplicated", fmt.Sprintf("%d / %d / %d", r.ParallelDelivery.Delivered, r.ParallelDelivery.Missing, r.ParallelDelivery.Duplicated), "", ""},
		{"Redis CPU per job life, parallelism (added)", fmt.Sprintf("%.1f µs (%+.1f)", r.ParallelRedisCPUUS, r.ParallelRedisCPUUS-r.BaselineRedisCPUPerJobUS), "", ""},
	}
	t.Notes = []string{"the rate is a pace: one delivery every (period + 20 ms)/limit, so that the receiver's busiest second, with network and scheduling jitter, stays within the limit",
		"Redis CPU per job life includes the idle Redis time of the longer windows the limits make (10 s for the rate phase)"}
	return []Table{t}
}
