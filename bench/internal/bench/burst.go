package bench

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"
)

// BurstResult is the burst scenario: every job due at one instant.
type BurstResult struct {
	// Phase names the burst within a scenario of several (sequence), and
	// Among says what else the store held ("on an empty store").
	Phase string `json:"phase,omitempty"`
	Among string `json:"among,omitempty"`
	Jobs  int    `json:"jobs"`
	// DrainSeconds is the time from the due instant to the last delivery.
	DrainSeconds float64  `json:"drain_seconds"`
	PerSec       float64  `json:"deliveries_per_sec"`
	AheadSeconds float64  `json:"created_ahead_seconds"`
	Delivery     Delivery `json:"delivery"`
	CPU          Usage    `json:"cpu"` // while firing
	// Life is CPU from the first create call to the settled last delivery:
	// the window of RedisCPUPerJobUS.
	Life             Usage   `json:"cpu_life"`
	RedisCPUPerJobUS float64 `json:"redis_cpu_per_job_us,omitempty"`
	// TailSeconds is how long after the last delivery Life went on (--life-tail).
	TailSeconds float64 `json:"life_tail_seconds,omitempty"`
	Checks      []Check `json:"checks"`
}

// Burst runs the burst scenario with n jobs due at one instant.
func (b *Bench) Burst(ctx context.Context, n int) (*BurstResult, error) {
	return b.burst(ctx, n, burstRun{profile: "burst"})
}

// burstRun is what a burst is among and held to.
type burstRun struct {
	phase, among string // BurstResult's
	// drainLimit is the target of the drain time in seconds; 0: issue 5's 1.5.
	drainLimit float64
	profile    string // the CPU profile's name
}

// burst runs n jobs due at one instant.
func (b *Bench) burst(ctx context.Context, n int, br burstRun) (*BurstResult, error) {
	f, err := b.fire(ctx, "burst", n, 0, func(int) time.Duration { return 0 }, 0, 500*time.Millisecond, br.profile, nil)
	r := &BurstResult{Phase: br.phase, Among: br.among, Jobs: n, AheadSeconds: f.ahead.Round(time.Millisecond).Seconds(), Delivery: f.delivery, CPU: f.cpu,
		Life: f.life, RedisCPUPerJobUS: f.life.redisUSPerJob(n), TailSeconds: b.cfg.LifeTail.Seconds()}
	if err != nil {
		return r, fmt.Errorf("burst: %w", err)
	}
	r.DrainSeconds = f.delivery.LastMS / 1000
	if r.DrainSeconds > 0 {
		r.PerSec = float64(f.delivery.Delivered) / r.DrainSeconds
	}
	drain := atMost("drain time", r.DrainSeconds, cmp.Or(br.drainLimit, 1.5), " s")
	if f.delivery.Missing > 0 {
		drain.Met, drain.Miss = false, fmt.Sprintf("%d jobs never arrived", f.delivery.Missing)
	}
	r.Checks = []Check{drain}
	_, cs := deliveryRows(f.delivery)
	r.Checks = append(r.Checks, cs...)
	r.Checks = append(r.Checks, redisCPUCheck(f.life, n, 30)...)
	return r, nil
}

// Tables prints the result.
func (r *BurstResult) Tables() []Table { return []Table{r.table()} }

func (r *BurstResult) table() Table {
	title := fmt.Sprintf("%s: %s jobs due at one instant", cmp.Or(r.Phase, "burst"), fmtInt(int64(r.Jobs)))
	if r.Among != "" {
		title += " " + r.Among
	}
	t := Table{Title: title,
		Head: []string{"metric", "value", "target", "verdict"}, Left: []int{2, 3}}
	d := r.Delivery
	var drain Check
	if len(r.Checks) > 0 {
		drain = r.Checks[0]
	}
	t.Rows = [][]string{
		{"first delivery after the due instant", fmtMS(d.FirstMS), "", ""},
		{"lateness p50", fmtMS(d.P50MS), "", ""},
		{"lateness p99", fmtMS(d.P99MS), "", ""},
		checkRow("due instant to last delivery", fmtSeconds(r.DrainSeconds), drain),
		{"deliveries per second", fmtRate(r.PerSec, "/s"), "", ""},
	}
	rows, _ := deliveryRows(d)
	t.Rows = append(t.Rows, rows...)
	t.Rows = append(t.Rows,
		[]string{"created ahead of the due instant", fmtSeconds(r.AheadSeconds), "", ""},
		[]string{"CPU while firing (% of one core)", fmtCPU(r.CPU), "", ""},
		redisCPURow("Redis CPU per job life", r.Life, r.Jobs, r.Checks))
	if n := countersNote(r.CPU); n != "" {
		t.Notes = append(t.Notes, n)
	}
	t.Notes = append(t.Notes, lifeNote(r.Life, r.TailSeconds))
	if r.Jobs != 20000 {
		t.Notes = append(t.Notes, fmt.Sprintf("the targets are for 20,000 jobs (drained within %s, <= 30 µs of Redis CPU each); they are shown unscaled", strings.TrimPrefix(drain.Target, "<= ")))
	}
	return t
}
