package bench

import (
	"context"
	"fmt"
	"time"
)

// ScaleResult is the scale scenario: many jobs pending far ahead, loaded
// through the batch endpoint, then the precision scenario among them.
type ScaleResult struct {
	Requested  int     `json:"requested"`
	Loaded     int     `json:"loaded"`
	Stopped    bool    `json:"stopped_at_time_limit"`
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobs_per_sec"`
	// Memory is Redis's used_memory once loaded, MemoryDelta its growth.
	Memory       int64   `json:"used_memory_bytes,omitempty"`
	MemoryDelta  int64   `json:"memory_growth_bytes,omitempty"`
	MemoryPerJob float64 `json:"memory_per_job_bytes,omitempty"`
	CPU          Usage   `json:"cpu"` // while loading
	// RedisCPUPerJobUS is Redis's CPU time while loading per job loaded.
	RedisCPUPerJobUS float64          `json:"redis_cpu_per_job_us,omitempty"`
	Precision        *PrecisionResult `json:"precision,omitempty"`
	Checks           []Check          `json:"checks"`
}

// ScaleConfig sizes the scale scenario.
type ScaleConfig struct {
	Jobs          int           // jobs to load; default 10,000,000
	MaxLoad       time.Duration // loading stops here; default 10m
	PrecisionJobs int           // the precision run among them; default 20,000
	PrecisionOver time.Duration // default 10s
}

func (c ScaleConfig) withDefaults() ScaleConfig {
	if c.Jobs <= 0 {
		c.Jobs = 10_000_000
	}
	if c.MaxLoad <= 0 {
		c.MaxLoad = 10 * time.Minute
	}
	if c.PrecisionJobs <= 0 {
		c.PrecisionJobs = 20000
	}
	if c.PrecisionOver <= 0 {
		c.PrecisionOver = 10 * time.Second
	}
	return c
}

// The targets of issue 5 for 10M pending jobs.
const (
	scaleTargetJobs   = 10_000_000
	scaleTargetMemory = 3 << 30
	scaleTargetLoad   = 3 * time.Minute
)

// Scale runs the scale scenario and removes every job it loaded.
func (b *Bench) Scale(ctx context.Context, c ScaleConfig) (*ScaleResult, error) {
	c = c.withDefaults()
	r := &ScaleResult{Requested: c.Jobs}
	base := b.now().Add(24 * time.Hour).UnixMilli()
	s := b.newSpec("scale", func(i int) int64 { return base + int64(i)*7919%86_400_000 })
	mem0, memOK := b.usedMemory(ctx)
	mark := b.mark(ctx)
	stop := b.profile("scale-load")
	l, err := b.load(ctx, s, c.Jobs, b.cfg.BatchSize, loadOpts{stopAt: time.Now().Add(c.MaxLoad), progress: func(n int, d time.Duration) {
		b.progressf("scale: loaded %s of %s jobs in %v (%s jobs/s)", fmtInt(int64(n)), fmtInt(int64(c.Jobs)), d.Round(time.Second), fmtInt(int64(float64(n)/d.Seconds())))
	}})
	stop()
	r.CPU = b.usage(ctx, mark)
	r.RedisCPUPerJobUS = r.CPU.redisUSPerJob(l.Created)
	r.Loaded, r.Stopped, r.Seconds, r.JobsPerSec = l.Created, l.Stopped, l.Elapsed.Seconds(), l.rate()
	if mem1, ok := b.usedMemory(ctx); ok && memOK {
		r.Memory, r.MemoryDelta = mem1, mem1-mem0
		if l.Created > 0 {
			r.MemoryPerJob = float64(mem1-mem0) / float64(l.Created)
		}
	}
	b.progressf("scale: %s jobs pending, loaded in %.1fs", fmtInt(int64(l.Created)), l.Elapsed.Seconds())
	if err == nil {
		r.Precision, err = b.precision(ctx, c.PrecisionJobs, 0, c.PrecisionOver, l.Created, "scale-precision")
	}
	b.progressf("scale: removing the loaded jobs")
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if derr := b.drop(cctx, s, c.Jobs, nil); derr != nil && err == nil {
		err = fmt.Errorf("clean up: %w", derr)
	}
	if err != nil {
		return r, fmt.Errorf("scale: %w", err)
	}
	// Held against the 10M targets, extrapolated linearly when fewer were loaded.
	k := float64(scaleTargetJobs) / float64(max(r.Loaded, 1))
	r.Checks = []Check{atMost("time to load 10M", r.Seconds*k, scaleTargetLoad.Seconds(), " s")}
	if r.MemoryPerJob > 0 {
		r.Checks = append(r.Checks, atMost("memory of 10M pending", r.MemoryPerJob*scaleTargetJobs/(1<<30), 2.5, " GiB")) // issue 13: 2.5 GiB
	}
	return r, nil
}

// Tables prints the result.
func (r *ScaleResult) Tables() []Table {
	t := Table{Title: fmt.Sprintf("scale: %s jobs pending far ahead, loaded through the batch endpoint", fmtInt(int64(r.Loaded))),
		Head: []string{"metric", "value", "target", "verdict"}, Left: []int{2, 3}}
	extra := r.Loaded != scaleTargetJobs
	name := func(s string) string {
		if extra {
			return s + " (extrapolated to 10M)"
		}
		return s
	}
	t.Rows = [][]string{
		{"jobs loaded", fmtInt(int64(r.Loaded)) + " / " + fmtInt(int64(r.Requested)), "", ""},
		{"time to load", fmtSeconds(r.Seconds), "", ""},
		{"load rate", fmtRate(r.JobsPerSec, "jobs/s"), "", ""},
	}
	for _, c := range r.Checks {
		switch c.Metric {
		case "time to load 10M":
			t.Rows = append(t.Rows, checkRow(name("time to load 10M"), fmtSeconds(c.Value), c))
		case "memory of 10M pending":
			t.Rows = append(t.Rows, checkRow(name("Redis memory of 10M pending"), fmtBytes(c.Value*(1<<30)), c))
		}
	}
	if r.Memory > 0 {
		t.Rows = append(t.Rows,
			[]string{"Redis used_memory once loaded", fmtBytes(float64(r.Memory)), "", ""},
			[]string{"memory per pending job", fmtBytes(r.MemoryPerJob), "", ""})
	}
	t.Rows = append(t.Rows, []string{"CPU while loading (% of one core)", fmtCPU(r.CPU), "", ""},
		redisCPURow("Redis CPU per job loaded", r.CPU, r.Loaded, nil))
	if n := countersNote(r.CPU); n != "" {
		t.Notes = append(t.Notes, n)
	}
	t.Notes = append(t.Notes, "Redis CPU per job loaded = growth of INFO used_cpu_user+used_cpu_sys over the load (kairos's background work included) / jobs loaded")
	if r.Stopped {
		t.Notes = append(t.Notes, "loading stopped at the time limit (--scale-max-load)")
	}
	out := []Table{t}
	if r.Precision != nil {
		out = append(out, r.Precision.Tables()...)
	}
	return out
}
