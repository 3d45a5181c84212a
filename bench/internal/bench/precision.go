package bench

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// PrecisionResult is the precision scenario: jobs due uniformly over a
// window, created ahead; lateness is arrival at the receiver minus due time.
type PrecisionResult struct {
	// Phase names the run within a scenario of several (sequence).
	Phase       string  `json:"phase,omitempty"`
	Jobs        int     `json:"jobs"`
	OverSeconds float64 `json:"over_seconds"`
	PerSec      float64 `json:"due_per_sec"`
	Pending     int     `json:"other_pending,omitempty"` // other jobs pending meanwhile (scale)
	// BatchSize is how many jobs a create call carried: 1 for single creates.
	BatchSize   int     `json:"batch_size"`
	LeadSeconds float64 `json:"lead_seconds"`
	// AheadSeconds is how long before the first due time creating the jobs ended.
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

// Precision runs the precision scenario: n jobs due uniformly over the window.
func (b *Bench) Precision(ctx context.Context, n int, over time.Duration) (*PrecisionResult, error) {
	return b.precision(ctx, n, over, precisionRun{profile: "precision"})
}

// precisionRun is what a precision run is created by, among, and held to.
type precisionRun struct {
	phase   string // the phase it is of a scenario that runs several; "" for none
	size    int    // jobs per create call; 0: --batch-size
	pending int    // other jobs pending meanwhile
	// cpuLimit is the target of Redis CPU per job life in µs; 0: issue 13's 50.
	cpuLimit float64
	profile  string // the CPU profile's name
}

// precision runs n jobs due uniformly over the window.
func (b *Bench) precision(ctx context.Context, n int, over time.Duration, pr precisionRun) (*PrecisionResult, error) {
	at := func(i int) time.Duration { return time.Duration(int64(over) * int64(i) / int64(n)) }
	f, err := b.fire(ctx, "prec", n, pr.size, at, over, 500*time.Millisecond, pr.profile, nil)
	r := &PrecisionResult{Phase: pr.phase, Jobs: n, OverSeconds: over.Seconds(), PerSec: float64(n) / over.Seconds(), Pending: pr.pending, BatchSize: f.size,
		LeadSeconds: f.lead.Round(time.Millisecond).Seconds(), AheadSeconds: f.ahead.Round(time.Millisecond).Seconds(), Delivery: f.delivery, CPU: f.cpu,
		Life: f.life, RedisCPUPerJobUS: f.life.redisUSPerJob(n), TailSeconds: b.cfg.LifeTail.Seconds()}
	if err != nil {
		return r, fmt.Errorf("precision: %w", err)
	}
	d := f.delivery
	r.Checks = []Check{atMost("lateness p99", d.P99MS, 5, " ms"), atMost("lateness max", d.MaxMS, 25, " ms")}
	_, cs := deliveryRows(d)
	r.Checks = append(r.Checks, cs...)
	r.Checks = append(r.Checks, redisCPUCheck(f.life, n, cmp.Or(pr.cpuLimit, 50))...)
	return r, nil
}

// Tables prints the result.
func (r *PrecisionResult) Tables() []Table { return []Table{r.table()} }

func (r *PrecisionResult) table() Table {
	title := fmt.Sprintf("%s: %s jobs due uniformly over %gs (%s jobs/s)", cmp.Or(r.Phase, "precision"), fmtInt(int64(r.Jobs)), r.OverSeconds, fmtInt(int64(r.PerSec)))
	if r.BatchSize > 0 {
		title += ", created " + createdBy(r.BatchSize)
	}
	if r.Pending > 0 {
		title += fmt.Sprintf(", with %s other jobs pending", fmtInt(int64(r.Pending)))
	}
	t := Table{Title: title, Head: []string{"metric", "value", "target", "verdict"}, Left: []int{2, 3}}
	d := r.Delivery
	var p99, mx Check
	if len(r.Checks) >= 2 {
		p99, mx = r.Checks[0], r.Checks[1]
	}
	t.Rows = [][]string{
		{"lateness min", fmtMS(d.MinMS), "", ""},
		{"lateness p50", fmtMS(d.P50MS), "", ""},
		{"lateness p90", fmtMS(d.P90MS), "", ""},
		checkRow("lateness p99", fmtMS(d.P99MS), p99),
		checkRow("lateness max", fmtMS(d.MaxMS), mx),
	}
	if len(d.Slices) > 0 {
		p50s, maxes := make([]string, len(d.Slices)), make([]string, len(d.Slices))
		for i, sl := range d.Slices {
			p50s[i], maxes[i] = strconv.FormatFloat(sl.P50MS, 'f', 1, 64), strconv.FormatFloat(sl.MaxMS, 'f', 1, 64)
		}
		t.Rows = append(t.Rows,
			[]string{"p50 per tenth of the window (ms)", strings.Join(p50s, " "), "", ""},
			[]string{"max per tenth of the window (ms)", strings.Join(maxes, " "), "", ""})
	}
	rows, _ := deliveryRows(d)
	t.Rows = append(t.Rows, rows...)
	t.Rows = append(t.Rows,
		[]string{"created ahead of first due time", fmtSeconds(r.AheadSeconds), "", ""},
		[]string{"CPU while firing (% of one core)", fmtCPU(r.CPU), "", ""},
		redisCPURow("Redis CPU per job life", r.Life, r.Jobs, r.Checks))
	if r.Life.Scripts {
		t.Rows = append(t.Rows, []string{"Redis script time per job life", fmtScriptUS(r.Life, r.Jobs), "", ""},
			[]string{"script calls per job life", fmtScriptCalls(r.Life, r.Jobs), "", ""})
		t.Notes = append(t.Notes, scriptTimeNote)
	}
	if n := countersNote(r.CPU); n != "" {
		t.Notes = append(t.Notes, n)
	}
	t.Notes = append(t.Notes, "lateness = arrival at the bench's receiver minus the job's due time (run_at, ms)",
		lifeNote(r.Life, r.TailSeconds))
	if r.Pending == 0 {
		t.Notes = append(t.Notes, "issue 13 sets <= 50 µs with 100,000 other jobs pending: --scenario scale --scale-jobs 100000 runs precision among them")
	}
	if r.AheadSeconds < 0 {
		t.Notes = append(t.Notes, "INVALID: creating the jobs took longer than the lead; the first jobs were created after they were due (raise --lead)")
	}
	return t
}
