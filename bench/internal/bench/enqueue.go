package bench

import (
	"context"
	"fmt"
	"time"
)

// EnqueueResult is the enqueue scenario: N jobs due in about an hour,
// created once with single calls and once with batch calls.
type EnqueueResult struct {
	Jobs      int          `json:"jobs"`
	Clients   int          `json:"clients"`
	BatchSize int          `json:"batch_size"`
	Single    EnqueuePhase `json:"single"`
	Batch     EnqueuePhase `json:"batch"`
	Checks    []Check      `json:"checks"`
}

// EnqueuePhase is one way of creating the jobs.
type EnqueuePhase struct {
	Created    int     `json:"created"`
	Calls      int     `json:"calls"`
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobs_per_sec"`
	// Call latency: one job (single) or one batch.
	P50MS float64 `json:"latency_p50_ms"`
	P99MS float64 `json:"latency_p99_ms"`
	// MemoryPerJob is Redis's used_memory growth divided by the jobs (0 when unknown).
	MemoryPerJob float64 `json:"memory_per_job_bytes,omitempty"`
	CPU          Usage   `json:"cpu"`
	// RedisCPUPerJobUS is Redis's CPU time over the creates per job created.
	RedisCPUPerJobUS float64 `json:"redis_cpu_per_job_us,omitempty"`
}

// Enqueue runs the enqueue scenario with n jobs.
func (b *Bench) Enqueue(ctx context.Context, n int) (*EnqueueResult, error) {
	res := &EnqueueResult{Jobs: n, Clients: b.cfg.Clients, BatchSize: b.cfg.BatchSize}
	for _, ph := range []struct {
		name string
		size int
		out  *EnqueuePhase
	}{{"single", 1, &res.Single}, {"batch", b.cfg.BatchSize, &res.Batch}} {
		base := b.now().Add(time.Hour).UnixMilli()
		// Due times spread over ten minutes, in no particular order.
		s := b.newSpec("enq", func(i int) int64 { return base + int64(i)*7919%600_000 })
		b.settleMemory(ctx) // the previous phase's clean-up freed in the background
		mem0, memOK := b.usedMemory(ctx)
		mark := b.mark(ctx)
		stop := b.profile("enqueue-" + ph.name)
		l, err := b.load(ctx, s, n, ph.size, loadOpts{})
		stop()
		u := b.usage(ctx, mark)
		*ph.out = EnqueuePhase{Created: l.Created, Calls: len(l.Lat), Seconds: l.Elapsed.Seconds(), JobsPerSec: l.rate(), CPU: u,
			RedisCPUPerJobUS: u.redisUSPerJob(l.Created)}
		if q := durQuantiles(l.Lat, 0.5, 0.99); len(l.Lat) > 0 {
			ph.out.P50MS, ph.out.P99MS = q[0], q[1]
		}
		if mem1, ok := b.usedMemory(ctx); ok && memOK && l.Created > 0 {
			ph.out.MemoryPerJob = float64(mem1-mem0) / float64(l.Created)
		}
		b.progressf("enqueue: %s creates: %d jobs in %.2fs", ph.name, l.Created, l.Elapsed.Seconds())
		cctx, cancel := cleanupContext(ctx)
		derr := b.drop(cctx, s, n, nil)
		cancel()
		if derr != nil && err == nil {
			err = fmt.Errorf("clean up: %w", derr)
		}
		if err != nil {
			return res, fmt.Errorf("enqueue %s: %w", ph.name, err)
		}
	}
	res.Checks = []Check{
		atLeast("single creates", res.Single.JobsPerSec, 20000, " jobs/s"),
		atLeast("batch creates", res.Batch.JobsPerSec, 150000, " jobs/s"),
	}
	// issue 13's target: 250 B a pending job, single and batch creates alike
	if res.Single.MemoryPerJob > 0 {
		res.Checks = append(res.Checks, atMost("memory per pending job (single)", res.Single.MemoryPerJob, 250, " B"))
	}
	if res.Batch.MemoryPerJob > 0 {
		res.Checks = append(res.Checks, atMost("memory per pending job (batch)", res.Batch.MemoryPerJob, 250, " B"))
	}
	return res, nil
}

// Tables prints the result.
func (r *EnqueueResult) Tables() []Table { return []Table{r.table()} }

func (r *EnqueueResult) table() Table {
	t := Table{
		Title: fmt.Sprintf("enqueue: %s jobs due in about an hour, %d clients", fmtInt(int64(r.Jobs)), r.Clients),
		Head:  []string{"metric", "single creates", "batch creates (" + fmtInt(int64(r.BatchSize)) + "/call)", "target", "verdict"},
		Left:  []int{3, 4},
	}
	s, b := r.Single, r.Batch
	verdict := func(name string) (string, string) {
		if c, ok := findCheck(r.Checks, name); ok {
			return c.Target, c.verdict()
		}
		return "", ""
	}
	st, sv := verdict("single creates")
	bt, bv := verdict("batch creates")
	mt, mv := verdict("memory per pending job (batch)")
	_, msv := verdict("memory per pending job (single)")
	if msv != "" && msv != mv {
		mv = "single: " + msv + "; batch: " + mv
	}
	redisUS := func(p EnqueuePhase) string {
		if !p.CPU.Redis {
			return "n/a"
		}
		return fmtUS(p.RedisCPUPerJobUS)
	}
	mem := func(p EnqueuePhase) string {
		if p.MemoryPerJob == 0 {
			return "n/a"
		}
		return fmtBytes(p.MemoryPerJob)
	}
	t.Rows = [][]string{
		{"jobs created", fmtInt(int64(s.Created)), fmtInt(int64(b.Created)), "", ""},
		{"time", fmtSeconds(s.Seconds), fmtSeconds(b.Seconds), "", ""},
		{"throughput (single)", fmtRate(s.JobsPerSec, "jobs/s"), "", st, sv},
		{"throughput (batch)", "", fmtRate(b.JobsPerSec, "jobs/s"), bt, bv},
		{"call latency p50", fmtMS(s.P50MS), fmtMS(b.P50MS), "", ""},
		{"call latency p99", fmtMS(s.P99MS), fmtMS(b.P99MS), "", ""},
		{"Redis memory per pending job", mem(s), mem(b), mt, mv},
		{"Redis CPU per job created", redisUS(s), redisUS(b), "", ""},
		{"CPU (% of one core)", fmtCPU(s.CPU), fmtCPU(b.CPU), "", ""},
	}
	t.Notes = append(t.Notes, "memory is INFO used_memory growth / jobs; the client, kairos and Redis share this machine's CPUs",
		"Redis CPU per job created = growth of INFO used_cpu_user+used_cpu_sys over the creates (nothing falls due; kairos's background work included) / jobs created")
	for _, p := range []struct {
		name string
		u    Usage
	}{{"single", s.CPU}, {"batch", b.CPU}} {
		if n := countersNote(p.u); n != "" {
			t.Notes = append(t.Notes, p.name+": "+n)
		}
	}
	return t
}
