package bench

import (
	"context"
	"fmt"
	"time"
)

// ScaleResult is the scale scenario: many jobs pending far ahead, loaded
// through the batch endpoint, then the precision scenario among them.
type ScaleResult struct {
	PendingLoad
	Precision *PrecisionResult `json:"precision,omitempty"`
	Checks    []Check          `json:"checks"`
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
	p, err := b.loadPending(ctx, "scale", c.Jobs, 24*time.Hour, 24*time.Hour, c.MaxLoad, nil)
	r := &ScaleResult{PendingLoad: *p}
	if err == nil {
		r.Precision, err = b.precision(ctx, c.PrecisionJobs, c.PrecisionOver, precisionRun{pending: p.Loaded, profile: "scale-precision"})
	}
	b.progressf("scale: removing the loaded jobs")
	if derr := b.dropPending(ctx, p); derr != nil && err == nil {
		err = derr
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
	t.Rows = r.loadRows()
	for _, c := range r.Checks {
		switch c.Metric {
		case "time to load 10M":
			t.Rows = append(t.Rows, checkRow(name("time to load 10M"), fmtSeconds(c.Value), c))
		case "memory of 10M pending":
			t.Rows = append(t.Rows, checkRow(name("Redis memory of 10M pending"), fmtBytes(c.Value*(1<<30)), c))
		}
	}
	t.Rows = append(t.Rows, r.costRows(nil)...)
	t.Notes = r.notes("--scale-max-load")
	out := []Table{t}
	if r.Precision != nil {
		out = append(out, r.Precision.Tables()...)
	}
	return out
}
