package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/kairos-sh/kairos/client"
)

// PendingLoad is a load of jobs due far ahead, created through the batch
// endpoint and left pending while other runs fire among them (scale,
// sequence).
type PendingLoad struct {
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
	RedisCPUPerJobUS float64 `json:"redis_cpu_per_job_us,omitempty"`
	// Retried counts the create calls sent again after kairos answered 503
	// (its Redis work took longer than KAIROS_REDIS_TIMEOUT).
	Retried int64 `json:"calls_retried,omitempty"`

	spec spec // the jobs, for removing them
}

// loadPending creates n jobs due from ahead to ahead+spread from now,
// spread over it in a scattered order, and measures the load: its rate,
// Redis's memory growth and CPU. Loading stops at maxLoad (0: no limit).
// The jobs stay pending until dropPending. Job i carries labels(i) (nil:
// none).
func (b *Bench) loadPending(ctx context.Context, scenario string, n int, ahead, spread, maxLoad time.Duration, labels func(i int) map[string]string) (*PendingLoad, error) {
	p := &PendingLoad{Requested: n}
	base, ms := b.now().Add(ahead).UnixMilli(), spread.Milliseconds()
	p.spec = b.newSpec(scenario, func(i int) int64 { return base + int64(i)*7919%ms })
	p.spec.labels = labels
	var stopAt time.Time
	if maxLoad > 0 {
		stopAt = time.Now().Add(maxLoad)
	}
	mem0, memOK := b.usedMemory(ctx)
	mark := b.mark(ctx)
	stop := b.profile(scenario + "-load")
	var retried atomic.Int64
	l, err := b.load(ctx, p.spec, n, b.cfg.BatchSize, loadOpts{stopAt: stopAt, progress: func(done int, d time.Duration) {
		b.progressf("%s: loaded %s of %s jobs in %v (%s jobs/s)", scenario, fmtInt(int64(done)), fmtInt(int64(n)), d.Round(time.Second), fmtInt(int64(float64(done)/d.Seconds())))
	}, send: func(ctx context.Context, lo, hi int) error { return b.createRetrying(ctx, p.spec, lo, hi, &retried) }})
	stop()
	p.Retried = retried.Load()
	p.CPU = b.usage(ctx, mark)
	p.RedisCPUPerJobUS = p.CPU.redisUSPerJob(l.Created)
	p.Loaded, p.Stopped, p.Seconds, p.JobsPerSec = l.Created, l.Stopped, l.Elapsed.Seconds(), l.rate()
	if mem1, ok := b.usedMemory(ctx); ok && memOK {
		p.Memory, p.MemoryDelta = mem1, mem1-mem0
		if l.Created > 0 {
			p.MemoryPerJob = float64(mem1-mem0) / float64(l.Created)
		}
	}
	b.progressf("%s: %s jobs pending, loaded in %.1fs", scenario, fmtInt(int64(l.Created)), l.Elapsed.Seconds())
	return p, err
}

// pendingAttempts bounds the create calls of a batch of pending jobs.
const pendingAttempts = 4

// createRetrying creates jobs lo..hi-1 of s in one batch call, sent again
// (up to pendingAttempts calls, 0.5 s more apart each time) while kairos
// answers 503: on a busy machine a batch's Redis work can outlast
// KAIROS_REDIS_TIMEOUT, and the pending jobs are the stage of a run, not
// its measure. The jobs have IDs, so a call sent again is an upsert.
// retried counts the calls sent again.
func (b *Bench) createRetrying(ctx context.Context, s spec, lo, hi int, retried *atomic.Int64) error {
	jobs := make([]client.JobRequest, 0, hi-lo)
	for i := lo; i < hi; i++ {
		jobs = append(jobs, s.job(i))
	}
	for attempt := 1; ; attempt++ {
		err := b.create(ctx, jobs, true)
		if err == nil || attempt == pendingAttempts || client.StatusCode(err) != http.StatusServiceUnavailable {
			return err
		}
		retried.Add(1)
		sleep(ctx, time.Duration(attempt)*500*time.Millisecond)
	}
}

// dropPending removes the jobs of a pending load, whatever ctx says: it
// is a clean-up.
func (b *Bench) dropPending(ctx context.Context, p *PendingLoad) error {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := b.drop(cctx, p.spec, p.Requested, nil); err != nil {
		return fmt.Errorf("clean up: %w", err)
	}
	return nil
}

// loadRows are the rows on how the load went.
func (p *PendingLoad) loadRows() [][]string {
	rows := [][]string{
		{"jobs loaded", fmtInt(int64(p.Loaded)) + " / " + fmtInt(int64(p.Requested)), "", ""},
		{"time to load", fmtSeconds(p.Seconds), "", ""},
		{"load rate", fmtRate(p.JobsPerSec, "jobs/s"), "", ""},
	}
	if p.Retried > 0 {
		rows = append(rows, []string{"create calls sent again after a 503", fmtInt(p.Retried), "", ""})
	}
	return rows
}

// costRows are the rows on what the load cost Redis; perJob, when it
// holds a check, is the memory per pending job's.
func (p *PendingLoad) costRows(perJob *Check) [][]string {
	var rows [][]string
	if p.Memory > 0 {
		per := []string{"memory per pending job", fmtBytes(p.MemoryPerJob), "", ""}
		if perJob != nil {
			per = checkRow(per[0], per[1], *perJob)
		}
		rows = append(rows, []string{"Redis used_memory once loaded", fmtBytes(float64(p.Memory)), "", ""}, per)
	}
	return append(rows, []string{"CPU while loading (% of one core)", fmtCPU(p.CPU), "", ""},
		redisCPURow("Redis CPU per job loaded", p.CPU, p.Loaded, nil))
}

// notes are the load's notes; limitFlag names the flag of its time limit.
func (p *PendingLoad) notes(limitFlag string) []string {
	var out []string
	if n := countersNote(p.CPU); n != "" {
		out = append(out, n)
	}
	out = append(out, "memory per pending job = growth of INFO used_memory over the load / jobs loaded",
		"Redis CPU per job loaded = growth of INFO used_cpu_user+used_cpu_sys over the load (kairos's background work included) / jobs loaded")
	if p.Retried > 0 {
		out = append(out, "kairos answered 503 to some create calls (a batch's Redis work outlasted KAIROS_REDIS_TIMEOUT, 1s by default); they were sent again, and the time to load includes the waits")
	}
	if p.Stopped {
		out = append(out, "loading stopped at the time limit ("+limitFlag+")")
	}
	return out
}
