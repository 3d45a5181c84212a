package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// CostResult is the cost scenario: Redis commands over a job's whole life
// (create, claim, fire, ack), and per second when nothing is due.
type CostResult struct {
	Jobs     int      `json:"jobs"`
	Seconds  float64  `json:"seconds"`
	Delivery Delivery `json:"delivery"`
	// ExecutedPerJob counts as Redis does (INFO commandstats): commands run
	// by scripts count one by one, the EVALSHA itself once more.
	ExecutedPerJob float64 `json:"executed_per_job"`
	// SentPerJob counts the commands the kairos process sent (round-trip
	// commands; pipelined ones each count); 0 when unknown.
	SentPerJob float64        `json:"sent_per_job,omitempty"`
	ByCommand  []CommandCount `json:"by_command"`
	// CPU per job over the jobs' whole life (the window of the precision
	// and burst figures), in microseconds: Redis's, and this process's
	// (kairos and the tool when self-started).
	RedisCPUPerJobUS   float64 `json:"redis_cpu_per_job_us,omitempty"`
	ProcessCPUPerJobUS float64 `json:"process_cpu_per_job_us"`
	Life               Usage   `json:"cpu_life"`
	// ByScript is Redis's time by script and command, from a second pass
	// with the slow log on.
	ByScript *ScriptCosts `json:"by_script,omitempty"`
	Idle     *IdleResult  `json:"idle,omitempty"`
	Checks   []Check      `json:"checks"`
}

// IdleResult is Redis's load while nothing is due.
type IdleResult struct {
	Pending        int            `json:"pending"`
	WindowSeconds  float64        `json:"window_seconds"`
	ExecutedPerSec float64        `json:"executed_per_sec"`
	SentPerSec     float64        `json:"sent_per_sec,omitempty"`
	ByCommand      []CommandCount `json:"by_command"`
}

// CostConfig sizes the cost scenario.
type CostConfig struct {
	Jobs       int           // jobs run through their life; default 10,000
	IdleJobs   int           // jobs pending far ahead during the idle measurement; default 1,000,000; <0 skips it
	IdleSettle time.Duration // wait after loading them; default 15s (longer than the scanner's 10s longest sleep)
	IdleWindow time.Duration // measured window; default 10s
}

func (c CostConfig) withDefaults() CostConfig {
	if c.Jobs <= 0 {
		c.Jobs = 10000
	}
	if c.IdleJobs == 0 {
		c.IdleJobs = 1_000_000
	}
	if c.IdleSettle <= 0 {
		c.IdleSettle = 15 * time.Second
	}
	if c.IdleWindow <= 0 {
		c.IdleWindow = 10 * time.Second
	}
	return c
}

var errNoRedis = errors.New("needs access to kairos's Redis: give --redis-url")

func (b *Bench) sent() map[string]int64 {
	if b.t.Sent == nil {
		return nil
	}
	return b.t.Sent()
}

func diff(after, before map[string]int64) map[string]int64 {
	if after == nil {
		return nil
	}
	out := make(map[string]int64, len(after))
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Cost runs the cost scenario.
func (b *Bench) Cost(ctx context.Context, c CostConfig) (*CostResult, error) {
	if b.t.Redis == nil {
		return nil, fmt.Errorf("cost: %w", errNoRedis)
	}
	c = c.withDefaults()
	r := &CostResult{Jobs: c.Jobs}
	if err := b.t.Redis.ResetStat(ctx); err != nil {
		return nil, fmt.Errorf("cost: CONFIG RESETSTAT: %w", err)
	}
	sent0 := b.sent()
	var measureErr error
	var evalUSec int64
	// The settle lets the last acks and the stats recorder's flush land.
	f, err := b.fire(ctx, "cost", c.Jobs, costDue(c.Jobs), time.Second, 1500*time.Millisecond, "cost", func() {
		ex, usec, ok := b.commandStats(ctx)
		if !ok {
			measureErr = errors.New("read INFO commandstats")
			return
		}
		evalUSec = usec["evalsha"] + usec["eval"] + usec["fcall"]
		r.ByCommand, r.ExecutedPerJob, r.SentPerJob = commandTable(ex, diff(b.sent(), sent0), usec, float64(c.Jobs))
	})
	r.Delivery, r.Life, r.Seconds = f.delivery, f.life, f.life.Seconds
	r.RedisCPUPerJobUS = f.life.redisUSPerJob(c.Jobs)
	r.ProcessCPUPerJobUS = f.life.ProcessPct / 100 * f.life.Seconds * 1e6 / float64(c.Jobs)
	if err == nil {
		err = measureErr
	}
	if err != nil {
		return r, fmt.Errorf("cost: %w", err)
	}
	r.Checks = []Check{atMost("commands per job life", r.ExecutedPerJob, 12, "")}
	b.progressf("cost: once more with the slow log recording every command, for the figures by script")
	if r.ByScript, err = b.scriptPass(ctx, c.Jobs, float64(evalUSec)/float64(c.Jobs)); err != nil {
		return r, fmt.Errorf("cost: by script: %w", err)
	}
	if c.IdleJobs > 0 {
		idle, err := b.idle(ctx, c)
		r.Idle = idle
		if err != nil {
			return r, fmt.Errorf("cost: idle: %w", err)
		}
		r.Checks = append(r.Checks, atMost("commands per second idle", idle.ExecutedPerSec, 20, "/s"))
	}
	return r, nil
}

// costDue spreads the cost scenario's jobs over one second, so that the
// scanner claims in ordinary passes.
func costDue(jobs int) func(i int) time.Duration {
	return func(i int) time.Duration { return time.Duration(int64(time.Second) * int64(i) / int64(jobs)) }
}

// idle loads jobs far ahead, waits for the steady state and counts the
// commands of a window in which nothing is due.
func (b *Bench) idle(ctx context.Context, c CostConfig) (*IdleResult, error) {
	base := b.now().Add(24 * time.Hour).UnixMilli()
	s := b.newSpec("idle", func(i int) int64 { return base + int64(i)*7919%3_600_000 })
	r := &IdleResult{Pending: c.IdleJobs, WindowSeconds: c.IdleWindow.Seconds()}
	l, err := b.load(ctx, s, c.IdleJobs, b.cfg.BatchSize, loadOpts{progress: func(n int, d time.Duration) {
		b.progressf("cost: loaded %d of %d idle jobs in %v", n, c.IdleJobs, d.Round(time.Second))
	}})
	if err == nil {
		b.progressf("cost: %d jobs pending far ahead (loaded in %.1fs); settling %v, then measuring %v", l.Created, l.Elapsed.Seconds(), c.IdleSettle, c.IdleWindow)
		sleep(ctx, c.IdleSettle)
		err = b.t.Redis.ResetStat(ctx)
	}
	if err == nil {
		sent0 := b.sent()
		sleep(ctx, c.IdleWindow)
		ex, usec, ok := b.commandStats(ctx)
		if !ok {
			err = errors.New("read INFO commandstats")
		}
		r.ByCommand, r.ExecutedPerSec, r.SentPerSec = commandTable(ex, diff(b.sent(), sent0), usec, c.IdleWindow.Seconds())
	}
	if err == nil {
		err = ctx.Err()
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if derr := b.drop(cctx, s, c.IdleJobs, nil); derr != nil && err == nil {
		err = fmt.Errorf("clean up: %w", derr)
	}
	return r, err
}

// Tables prints the result.
func (r *CostResult) Tables() []Table {
	var lifeCheck Check
	if len(r.Checks) > 0 {
		lifeCheck = r.Checks[0]
	}
	sentKnown := r.SentPerJob > 0
	life := Table{
		Title: fmt.Sprintf("cost: Redis commands per job over its life (create, claim, fire, ack), %s jobs", fmtInt(int64(r.Jobs))),
		Head:  []string{"command", "executed/job", "sent/job", "redis µs/job"},
	}
	for _, c := range r.ByCommand {
		life.Rows = append(life.Rows, []string{c.Command, f2(c.Executed), sentCell(c.Sent, sentKnown), f2(c.USec)})
	}
	life.Rows = append(life.Rows, []string{"TOTAL", f2(r.ExecutedPerJob), sentCell(r.SentPerJob, sentKnown), ""},
		[]string{"Redis CPU per job life (INFO)", "", "", f2(r.RedisCPUPerJobUS)})
	life.Notes = []string{
		"executed: INFO commandstats after CONFIG RESETSTAT; Redis 7 counts each redis.call inside a script under its own name, plus the EVALSHA itself",
		"sent: commands the kairos process sent (a script call counts once); background work (heartbeats, lock extends, idle BRPOP timeouts) is included",
		fmt.Sprintf("target: <= 12 commands per job life: executed %s -> %s", f2(r.ExecutedPerJob), lifeCheck.verdict()),
		"redis µs/job: Redis's time in the command (INFO commandstats usec); an EVALSHA's includes the commands its script runs",
		fmt.Sprintf("CPU per job life: Redis %s µs, this process %s µs (kairos and, self-started, the tool) over %.1f s (%s)",
			f2(r.RedisCPUPerJobUS), f2(r.ProcessCPUPerJobUS), r.Life.Seconds, fmtCPU(r.Life)),
		lifeWindow,
		fmt.Sprintf("delivered %d of %d, missing %d, duplicated %d, early %d", r.Delivery.Delivered, r.Delivery.Jobs, r.Delivery.Missing, r.Delivery.Duplicated, r.Delivery.Early),
	}
	out := []Table{life}
	if r.ByScript != nil {
		out = append(out, r.ByScript.tables()...)
	}
	if r.Idle != nil {
		idle := Table{
			Title: fmt.Sprintf("cost: Redis commands per second with nothing due, %s jobs pending far ahead (%gs window)", fmtInt(int64(r.Idle.Pending)), r.Idle.WindowSeconds),
			Head:  []string{"command", "executed/s", "sent/s"},
		}
		for _, c := range r.Idle.ByCommand {
			idle.Rows = append(idle.Rows, []string{c.Command, f2(c.Executed), sentCell(c.Sent, sentKnown)})
		}
		idle.Rows = append(idle.Rows, []string{"TOTAL", f2(r.Idle.ExecutedPerSec), sentCell(r.Idle.SentPerSec, sentKnown)})
		verdict := ""
		if len(r.Checks) > 1 {
			verdict = r.Checks[1].verdict()
		}
		idle.Notes = []string{
			"one kairos process (API, scanner, worker); every process adds its own share",
			fmt.Sprintf("target: <= 20 commands/s idle per process: executed %s/s -> %s", f2(r.Idle.ExecutedPerSec), verdict),
		}
		out = append(out, idle)
	}
	return out
}

func f2(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

func sentCell(v float64, known bool) string {
	if !known {
		return "n/a"
	}
	return f2(v)
}
